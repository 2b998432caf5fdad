// Make N changes through a node's admin socket, one after the other, each
// answered once that node applied it: POST /routes for db.tNNNNN on wave
// WAVE. Prints {"changes":N,"ms":...}.
//   node cluster_load.js SOCK N WAVE
'use strict';
const http = require('http');

const [sock, n, wave] = process.argv.slice(2);

function post(path, body) {
	return new Promise((resolve, reject) => {
		const req = http.request({ socketPath: sock, method: 'POST', path,
			agent: false,
			headers: { 'Content-Type': 'application/json' } }, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => resolve({ status: res.statusCode,
				body: Buffer.concat(chunks).toString() }));
		});
		req.on('error', reject);
		req.end(JSON.stringify(body));
	});
}

(async () => {
	const t0 = process.hrtime.bigint();
	for (let i = 0; i < +n; i++) {
		const r = await post('/routes', { object: `db.t${String(i).padStart(5, '0')}`,
			wave: +wave });
		if (r.status !== 200)
			throw new Error(`route ${i}: ${r.status} ${r.body}`);
	}
	console.log(JSON.stringify({ changes: +n,
		ms: Math.round(Number(process.hrtime.bigint() - t0) / 1e6) }));
})().catch((e) => { console.error(e.message); process.exit(1); });
