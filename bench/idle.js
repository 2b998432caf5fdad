// floe: bench/idle.js -- opens N keep-alive connections to a proxy, sends
// one GET on each, reads each whole answer (by its Content-Length) and keeps
// every connection open and idle. Prints "ready N OK" once all answered,
// then waits until it is killed or stdin closes.
//
//   node bench/idle.js PORT PATH N
'use strict';
const net = require('net');

const [portArg, path, nArg] = process.argv.slice(2);
if (!portArg || !path || !nArg) {
	console.error('usage: idle.js PORT PATH N');
	process.exit(2);
}
const port = Number(portArg);
const n = Number(nArg);
const req = `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
	'User-Agent: floe-bench-idle\r\nAccept: application/json\r\n\r\n';
const socks = [];
let answered = 0, ok = 0, failed = 0, opening = 0;

// One connection: send the request, count the answer, then stay idle.
function open() {
	const s = net.connect(port, '127.0.0.1');
	let buf = Buffer.alloc(0), need = -1, status = 0;
	s.on('connect', () => s.write(req));
	s.on('data', (d) => {
		if (need === 0) return;
		buf = Buffer.concat([buf, d]);
		if (need < 0) {
			const e = buf.indexOf('\r\n\r\n');
			if (e < 0) return;
			const head = buf.subarray(0, e).toString('latin1');
			status = Number(head.split(' ')[1]);
			const m = /content-length: *(\d+)/i.exec(head);
			need = e + 4 + (m ? Number(m[1]) : 0);
		}
		if (buf.length >= need) {
			need = 0;
			buf = null;
			answered++;
			if (status === 200) ok++;
			done();
		}
	});
	s.on('error', () => { failed++; done(); });
	socks.push(s);
}

function done() {
	if (answered + failed === n) {
		console.log(`ready ${n} ${ok}${failed ? ` failed ${failed}` : ''}`);
	}
}

// Open them in batches, so the listen backlog is never the limit.
function batch() {
	const k = Math.min(100, n - opening);
	for (let i = 0; i < k; i++) open();
	opening += k;
	if (opening < n) setTimeout(batch, 10);
}
batch();
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
