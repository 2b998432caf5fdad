// Propagation of wave changes across cluster nodes, from outside floe.
//   node cluster_prop.js SOCK PORTS TABLE_PATH WAVE RUNS
// SOCK is node A's admin socket; PORTS the data ports of the other nodes
// (comma-separated). Per run: flip WAVE to the lakehouse on A, then time
// from A's answer to the first LoadTable of TABLE_PATH each other node
// answers from the lakehouse; then roll back on A and time the same to the
// warehouse; then acknowledge. One short connection per read. Prints one
// JSON object: {"runs","flip":{"p50","max"},"rollback":{"p50","max"}} in
// milliseconds, each over every (run, node) pair.
'use strict';
const http = require('http');

const [sock, ports, path, wave, runs] = process.argv.slice(2);
const nodes = ports.split(',').map(Number);

function call(opts, body) {
	return new Promise((resolve, reject) => {
		const req = http.request({ agent: false, ...opts }, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => resolve({ status: res.statusCode,
				headers: res.headers,
				body: Buffer.concat(chunks).toString() }));
		});
		req.on('error', reject);
		req.setTimeout(10000, () => req.destroy(new Error('timeout')));
		if (body) req.end(body);
		else req.end();
	});
}

async function admin(verb, body) {
	const r = await call({ socketPath: sock, method: 'POST',
		path: `/waves/${wave}/${verb}`,
		headers: { 'Content-Type': 'application/json' } },
	JSON.stringify(body));
	if (r.status !== 200)
		throw new Error(`${verb}: ${r.status} ${r.body}`);
}

// Milliseconds from T0 until PORT answers from SIDE (at most 10 s).
async function until(port, side, t0) {
	for (;;) {
		const r = await call({ host: '127.0.0.1', port, path });
		if (r.headers['x-floe-target'] === side)
			return Number(process.hrtime.bigint() - t0) / 1e6;
		if (Number(process.hrtime.bigint() - t0) > 10e9)
			throw new Error(`port ${port} never answered from ${side}`);
	}
}

function stats(v) {
	v.sort((a, b) => a - b);
	return { p50: +v[Math.floor(v.length / 2)].toFixed(2),
		max: +v[v.length - 1].toFixed(2) };
}

(async () => {
	const flip = [], back = [];
	for (let i = 0; i < +runs; i++) {
		await admin('flip', { to: 'lakehouse' });
		let t0 = process.hrtime.bigint();
		flip.push(...await Promise.all(nodes.map((p) => until(p, 'lakehouse', t0))));
		await admin('rollback', { reason: `run ${i}` });
		t0 = process.hrtime.bigint();
		back.push(...await Promise.all(nodes.map((p) => until(p, 'warehouse', t0))));
		await admin('ack', {});
	}
	console.log(JSON.stringify({ runs: +runs, flip: stats(flip),
		rollback: stats(back) }));
})().catch((e) => { console.error(e.message); process.exit(1); });
