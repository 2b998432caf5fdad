// floe: bench/report.js -- the report of one bench/run.sh: medians of the
// rounds of every scenario, the table, one ratio line per scenario against
// nginx, the goals of issue 6, and the JSON with every figure.
//
//   node bench/report.js SCRATCH_DIR OUT.json
'use strict';
const fs = require('fs');
const path = require('path');

const [dir, out] = process.argv.slice(2);
const lines = (f) => {
	const p = path.join(dir, f);
	if (!fs.existsSync(p)) return [];
	return fs.readFileSync(p, 'utf8').split('\n').filter((l) => l.length);
};
const median = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	const m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const machine = {};
for (const l of lines('machine.txt')) {
	const i = l.indexOf('=');
	const k = l.slice(0, i), v = l.slice(i + 1);
	// A commit's short hash can be all digits: it stays a string.
	machine[k] = k !== 'floe_commit' && /^-?\d+(\.\d+)?$/.test(v) ?
		Number(v) : v;
}

// Scenarios in the order they ran, with their rounds.
const scen = new Map();
for (const l of lines('scenarios.tsv')) {
	const [name, proxy, body, rss, url] = l.split('\t');
	scen.set(name, { name, proxy, body_bytes: +body, rss_kb: +rss, url,
		rounds: [] });
}
for (const l of lines('rounds.tsv')) {
	const [name, r, rps, p50, p99, cpu, req, err, bad] = l.split('\t');
	scen.get(name).rounds.push({ round: +r, rps: +rps, p50_us: +p50,
		p99_us: +p99, cpu_us_per_req: +cpu, requests: +req,
		socket_errors: +err, non_2xx: +bad });
}
for (const s of scen.values()) {
	for (const k of ['rps', 'p50_us', 'p99_us', 'cpu_us_per_req'])
		s[k] = median(s.rounds.map((r) => r[k]));
	s.errors = s.rounds.reduce((a, r) => a + r.socket_errors + r.non_2xx, 0);
}

const idle = lines('idle.tsv').map((l) => {
	const [name, proxy, before, after, status] = l.split('\t');
	return { scenario: name, proxy, clients: machine.idle_clients,
		rss_kb_before: +before, rss_kb_with_clients: +after, status };
});
const soak = lines('soak.tsv').map((l) => {
	const [name, secs, r0, r1, rps, req, p99, ticks, errs] = l.split('\t');
	return { scenario: name, secs: +secs, rss_kb_before: +r0,
		rss_kb_after: +r1, drift_kb: r1 - r0, rps: +rps, requests: +req,
		p99_us: +p99, cpu_us_per_req: ticks * 1e6 / (machine.hz || 100) / req,
		errors: +errs };
})[0] || null;
const loads = lines('loads.txt').map((l) => {
	const [name, routes, secs] = l.split(' ');
	return { floe: name, routes: +routes, seconds: +secs,
		per_route_ms: secs * 1000 / routes };
});
const notes = lines('notes');
// Other work on the machine shows in every figure; say so.
const load = (v) => Number(String(v || '0').split(' ')[0]);
if (Math.max(load(machine.loadavg_start), load(machine.loadavg_end)) >
    0.5 * (machine.nproc || 1))
	notes.push(`busy machine: load average ${machine.loadavg_start} at the ` +
		`start, ${machine.loadavg_end} at the end (other processes shared ` +
		'the CPUs): compare the ratios of this run, not absolute figures');

// --- table ---------------------------------------------------------------
const f0 = (x) => x.toFixed(0), f1 = (x) => x.toFixed(1);
const ms = (us) => us >= 1000 ? `${(us / 1000).toFixed(2)}ms` : `${f0(us)}us`;
const rows = [['scenario', 'body', 'req/s', 'p50', 'p99', 'CPU us/req',
	'RSS MB', 'errors']];
for (const s of scen.values())
	rows.push([s.name, s.body_bytes >= 1e6 ? `${(s.body_bytes / 1048576).toFixed(1)}MB`
		: `${(s.body_bytes / 1024).toFixed(1)}KB`, f0(s.rps), ms(s.p50_us),
	ms(s.p99_us), f1(s.cpu_us_per_req), f1(s.rss_kb / 1024), String(s.errors)]);
const width = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
console.log('');
for (const [j, r] of rows.entries()) {
	console.log(r.map((c, i) => (i === 0 ? c.padEnd(width[i])
		: c.padStart(width[i]))).join('  '));
	if (j === 0) console.log(width.map((w) => '-'.repeat(w)).join('  '));
}

// --- ratios against nginx ------------------------------------------------
const ref = (s) => scen.get(s.name.endsWith('-1m') ? 'nginx-1m' : 'nginx');
const ratio = (a, b) => (b ? a / b : null);
const x = (v) => (v == null ? 'n/a' : `${v.toFixed(2)}x`);
const ratios = {};
console.log('');
for (const s of scen.values()) {
	const n = ref(s);
	if (!n || n === s) continue;
	const r = {
		against: n.name,
		rps: ratio(s.rps, n.rps),
		p50: ratio(s.p50_us, n.p50_us),
		p99: ratio(s.p99_us, n.p99_us),
		cpu_per_req: ratio(s.cpu_us_per_req, n.cpu_us_per_req),
	};
	// Rounds ran interleaved: round R of S and of nginx shared the
	// machine's weather, so their ratios show how much of a median is noise.
	const nr = new Map(n.rounds.map((o) => [o.round, o]));
	const both = s.rounds.filter((o) => nr.has(o.round));
	r.by_round = {
		round: both.map((o) => o.round),
		rps: both.map((o) => ratio(o.rps, nr.get(o.round).rps)),
		cpu_per_req: both.map((o) => ratio(o.cpu_us_per_req,
			nr.get(o.round).cpu_us_per_req)),
	};
	ratios[s.name] = r;
	console.log(`${s.name} vs ${n.name}: req/s ${x(r.rps)}, p50 ${x(r.p50)}, ` +
		`p99 ${x(r.p99)}, cpu/req ${x(r.cpu_per_req)}`);
}
const fx = (v) => (v == null ? 'n/a' : v.toFixed(2));
const rr = ratios['floe-routed'], ng = scen.get('nginx');
if (rr && rr.by_round.round.length > 0) {
	const spread = ng.rounds.map((o) => o.rps);
	console.log('floe-routed vs nginx, round by round: cpu/req ' +
		`${rr.by_round.cpu_per_req.map(fx).join(' ')}, req/s ` +
		`${rr.by_round.rps.map(fx).join(' ')} (nginx's own rounds: ` +
		`${f0(Math.min(...spread))} to ${f0(Math.max(...spread))} req/s)`);
}
// What floe's own credential costs per request: the 10-route floe without
// one, with a bearer token, with a SigV4 signature (CPU per request).
const c10 = scen.get('floe-routed-10'), cb = scen.get('floe-bearer'), cs = scen.get('floe-sigv4');
if (c10 && cb && cs)
	console.log('catalog credentials, cpu/request: none ' +
		`${fx(c10.cpu_us_per_req)} us, bearer ${fx(cb.cpu_us_per_req)} us, ` +
		`sigv4 ${fx(cs.cpu_us_per_req)} us (sigv4 - bearer: ` +
		`${fx(cs.cpu_us_per_req - cb.cpu_us_per_req)} us)`);
for (const n of notes) console.log(n);

// --- goals ---------------------------------------------------------------
const goals = [];
const goal = (name, value, ok, shown) => {
	goals.push({ goal: name, value, met: ok });
	const v = ok == null ? 'not measured' : ok ? 'met' : 'MISSED';
	console.log(`  ${v.padEnd(12)} ${name}${shown != null ? `: ${shown}` : ''}`);
};
console.log('\ngoals (issue 6):');
const fr = ratios['floe-routed'];
goal('floe routed >= 1.0x nginx req/s', fr && fr.rps, fr && fr.rps >= 1, fr && x(fr.rps));
goal('floe routed <= 1.0x nginx p99', fr && fr.p99, fr && fr.p99 <= 1, fr && x(fr.p99));
goal('floe routed <= 1.0x nginx CPU/request', fr && fr.cpu_per_req,
	fr && fr.cpu_per_req <= 1, fr && x(fr.cpu_per_req));
const fc = ratios['floe-cache'];
goal('floe cache hit >= 1.5x nginx req/s', fc ? fc.rps : null,
	fc ? fc.rps >= 1.5 : null, fc ? x(fc.rps) : null);
const base = scen.get('floe-routed');
for (const other of ['floe-routed-10', 'floe-routed-1000000']) {
	const o = scen.get(other);
	const d = o && base ? {
		cpu: o.cpu_us_per_req / base.cpu_us_per_req - 1,
		rps: o.rps / base.rps - 1,
	} : null;
	const pct = (v) => `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)}%`;
	goal(`${other.replace('floe-routed-', '')} routes within 5% of ${machine.routes || 10000} (CPU/request)`,
		d, d ? Math.abs(d.cpu) <= 0.05 : null,
		d ? `CPU/request ${pct(d.cpu)}, req/s ${pct(d.rps)}` : null);
}
const fi = idle.find((i) => i.proxy === 'floe');
goal(`floe RSS <= 32 MB with ${machine.idle_clients} idle keep-alive clients`,
	fi ? fi.rss_kb_with_clients : null,
	fi ? fi.rss_kb_with_clients <= 32 * 1024 && /^ready (\d+) \1$/.test(fi.status) : null,
	fi ? `${f1(fi.rss_kb_with_clients / 1024)} MB (${fi.status})` : null);
goal(`floe RSS drift < 1 MB over a ${soak ? soak.secs : 60} s run`,
	soak ? soak.drift_kb : null, soak ? soak.drift_kb < 1024 : null,
	soak ? `${soak.drift_kb} kB` : null);
for (const i of idle.filter((i) => i.proxy !== 'floe'))
	console.log(`  (${i.proxy} with ${i.clients} idle clients: ` +
		`${f1(i.rss_kb_with_clients / 1024)} MB, ${i.status})`);
for (const l of loads)
	console.log(`  (floe ${l.floe}: ${l.routes} routes loaded in ` +
		`${l.seconds}s, ${l.per_route_ms.toFixed(2)} ms each)`);

const result = {
	when: new Date().toISOString(),
	machine,
	scenarios: [...scen.values()],
	ratios,
	goals,
	idle,
	soak,
	route_loading: loads,
	notes,
};
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
console.log(`\nwrote ${out} (${machine.duration_s} s run)`);
