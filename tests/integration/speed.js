// Time the reconcile and error triggers from outside floe, one short
// connection per read (no process start in the measurement). One JSON line per
// run on stdout: {"run":i,"ms":...,"target":"warehouse"}.
//   node speed.js reconcile SOCK PORT OBJECT TABLE_PATH WAVE RUNS
//     per run: ack (if rolled back), flip, POST a gap record; ms is from
//     the POST's answer to the answer of the next LoadTable.
//   node speed.js errors SOCK PORT TABLE_PATH WAVE RUNS MIN
//     per run: ack, flip; MIN reads fail on the lakehouse (the catalog
//     answers 503); ms is from the answer of the read that made the
//     condition hold to the answer of the next read.
'use strict';
const http = require('http');

const [mode, sock, port] = process.argv.slice(2, 5);
// A fresh connection per read: a connect on 127.0.0.1 costs ~0.1 ms, and no
// read can meet a kept-alive connection floe has just closed.
const agent = false;

function call(opts, body) {
	return new Promise((resolve, reject) => {
		const req = http.request(opts, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
		});
		req.on('error', reject);
		if (body) req.end(body);
		else req.end();
	});
}
const admin = (method, path, body) =>
	call({ socketPath: sock, method, path, agent: false, headers: body ? { 'Content-Type': 'application/json' } : {} }, body);
const get = (path) => call({ host: '127.0.0.1', port: Number(port), path, agent });
const ms = (a, b) => Number(b - a) / 1e6;

async function ready(wave) {
	const w = JSON.parse((await admin('GET', `/waves/${wave}`)).body);
	if (w.state === 'rolled_back') await admin('POST', `/waves/${wave}/ack`, '{}');
	const f = await admin('POST', `/waves/${wave}/flip`, '{"to":"lakehouse"}');
	if (f.status !== 200) throw new Error(`flip: ${f.status} ${f.body}`);
}

async function reconcile(object, path, wave, runs) {
	for (let i = 0; i < runs; i++) {
		await ready(wave);
		const pre = await get(path);
		if (pre.headers['x-floe-target'] !== 'lakehouse') throw new Error('not on the lakehouse after the flip');
		await new Promise((r) => setTimeout(r, 2));
		const rec = { object, ts: new Date().toISOString(), count_match: false, aggregate_match: false, hash_match: false, bucket: 'gap', source: 'speed' };
		const p = await admin('POST', '/ledger', JSON.stringify(rec));
		const t1 = process.hrtime.bigint();
		if (p.status !== 200) throw new Error(`ledger: ${p.status} ${p.body}`);
		const g = await get(path);
		const t2 = process.hrtime.bigint();
		console.log(JSON.stringify({ run: i, ms: ms(t1, t2), target: g.headers['x-floe-target'] }));
	}
}

async function errors(path, wave, runs, min) {
	for (let i = 0; i < runs; i++) {
		await ready(wave);
		let last = null, g = null;
		for (let k = 0; k < min; k++) {
			g = await get(path);
			last = process.hrtime.bigint();
			if (g.headers['x-floe-target'] !== 'lakehouse') break;
		}
		g = await get(path);
		const t2 = process.hrtime.bigint();
		console.log(JSON.stringify({ run: i, ms: ms(last, t2), target: g.headers['x-floe-target'], status: g.status }));
	}
}

(async () => {
	const a = process.argv.slice(5);
	if (mode === 'reconcile') await reconcile(a[0], a[1], a[2], Number(a[3]));
	else await errors(a[0], a[1], Number(a[2]), Number(a[3]));

})().catch((e) => {
	console.error(e.message);
	process.exit(1);
});
