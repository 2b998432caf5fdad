// A webhook receiver for the trigger tests: records every POST (time and
// JSON body) and answers 200, or the status given with --status. GET
// /_posts lists what was received. Prints "ready PORT" once listening.
'use strict';
const http = require('http');

const args = process.argv.slice(2);
const opt = (name, def) => {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : def;
};
const status = Number(opt('--status', '200'));
const posts = [];

const server = http.createServer((req, res) => {
	const chunks = [];
	req.on('data', (c) => chunks.push(c));
	req.on('end', () => {
		if (req.method === 'GET' && req.url === '/_posts') {
			res.writeHead(200, { 'Content-Type': 'application/json' });
			return res.end(JSON.stringify({ posts }));
		}
		const text = Buffer.concat(chunks).toString('utf8');
		let body = null;
		try {
			body = JSON.parse(text);
		} catch (e) {
			body = { unparsed: text };
		}
		posts.push({ time: Date.now(), method: req.method, type: req.headers['content-type'] || '', body });
		res.writeHead(status, { 'Content-Type': 'text/plain' });
		res.end('ok\n');
	});
});
process.on('SIGTERM', () => process.exit(0));
server.listen(Number(opt('--port', '0')), '127.0.0.1', () => {
	process.stdout.write(`ready ${server.address().port}\n`);
});
