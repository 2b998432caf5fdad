// Load on floe's data path for the workers tests: C loops, each reading
// PATH on a fresh connection (so the kernel spreads them over the
// workers) until STOPFILE exists or MAXMS passed. One JSON line per
// answer on stdout, written whole as each answer ends (a test may read
// the last one while the load runs):
//   {"t0":ms,"t1":ms,"status":200,"target":"warehouse","worker":"0"}
// or {"t0":ms,"t1":ms,"err":"ECONNRESET"} for a read that failed; t0 is
// when the request was sent, t1 when the answer (or failure) came, both
// in ms since the epoch. A "{n}" in PATH becomes a number of its own for
// each read (no two the same: none is a cache hit).
//   node workers_load.js PORT PATH C STOPFILE MAXMS
'use strict';
const http = require('http');
const fs = require('fs');

const [port, path, c, stopfile, maxms] = process.argv.slice(2);
const now = () => performance.timeOrigin + performance.now();
const end = now() + Number(maxms);

function put(r) {
	fs.writeSync(1, JSON.stringify(r) + '\n');
}

let seq = 0;

function once() {
	return new Promise((resolve) => {
		const t0 = now();
		const req = http.request({ host: '127.0.0.1', port: Number(port),
			path: path.replace('{n}', String(seq++)), agent: false,
			timeout: 10000 }, (res) => {
			res.on('data', () => {});
			res.on('end', () => {
				put({ t0, t1: now(), status: res.statusCode,
					target: res.headers['x-floe-target'] || null,
					worker: res.headers['x-floe-worker'] || null });
				resolve();
			});
			res.on('error', (e) => {
				put({ t0, t1: now(), err: e.code || e.message });
				resolve();
			});
		});
		req.on('timeout', () => req.destroy(new Error('timeout')));
		req.on('error', (e) => {
			put({ t0, t1: now(), err: e.code || e.message });
			resolve();
		});
		req.end();
	});
}

async function loop() {
	while (now() < end && !fs.existsSync(stopfile))
		await once();
}

(async () => {
	const loops = [];
	for (let i = 0; i < Number(c); i++)
		loops.push(loop());
	await Promise.all(loops);
})();
