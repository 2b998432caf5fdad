// A TLS front for a plain catalog, as a load balancer terminating TLS
// would be: every connection accepted is piped both ways to the catalog,
// with backpressure (a floe that stops reading stops the catalog too).
//
//   node tlsfront.js CERT KEY CATALOG_PORT
//
// Binds 127.0.0.1 on a free port and prints "ready PORT"; SIGTERM stops it.
'use strict';
const fs = require('fs');
const net = require('net');
const tls = require('tls');

const [cert, key, port] = process.argv.slice(2);
const srv = tls.createServer({ cert: fs.readFileSync(cert),
	key: fs.readFileSync(key) }, (s) => {
	const u = net.connect(+port, '127.0.0.1');
	s.pipe(u);
	u.pipe(s);
	s.on('error', () => u.destroy());
	u.on('error', () => s.destroy());
});
srv.listen(0, '127.0.0.1', () => console.log(`ready ${srv.address().port}`));
process.on('SIGTERM', () => process.exit(0));
