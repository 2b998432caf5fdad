// floe: bench/report.js -- the report of one bench/run.sh: medians of the
// rounds of every scenario, the table, one ratio line per scenario against
// nginx, the goals of issues 6 and 20, the TLS checks, the slow clients,
// and the JSON with every figure.
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
	const [name, r, rps, p50, p99, cpu, req, err, bad, usr, vol, invol,
		lg] = l.split('\t');
	// The proxy's context switches a request: blocked (voluntary) and
	// preempted (involuntary); how busy the load CPU was (wrk and the
	// upstream), in percent.
	scen.get(name).rounds.push({ round: +r, rps: +rps, p50_us: +p50,
		p99_us: +p99, cpu_us_per_req: +cpu, user_us_per_req: +usr,
		kernel_us_per_req: cpu - usr, requests: +req,
		socket_errors: +err, non_2xx: +bad,
		switches_blocked_per_req: vol / req,
		switches_preempted_per_req: invol / req,
		load_cpu_busy_pct: +lg });
}
for (const s of scen.values()) {
	for (const k of ['rps', 'p50_us', 'p99_us', 'cpu_us_per_req',
		'user_us_per_req', 'kernel_us_per_req', 'switches_blocked_per_req',
		'switches_preempted_per_req', 'load_cpu_busy_pct'])
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
	'user', 'RSS MB', 'load CPU', 'errors']];
for (const s of scen.values())
	rows.push([s.name, s.body_bytes >= 1e6 ? `${(s.body_bytes / 1048576).toFixed(1)}MB`
		: `${(s.body_bytes / 1024).toFixed(1)}KB`, f0(s.rps), ms(s.p50_us),
	ms(s.p99_us), f1(s.cpu_us_per_req), f1(s.user_us_per_req),
	f1(s.rss_kb / 1024), `${f0(s.load_cpu_busy_pct)}%`, String(s.errors)]);
const width = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
console.log('');
for (const [j, r] of rows.entries()) {
	console.log(r.map((c, i) => (i === 0 ? c.padEnd(width[i])
		: c.padStart(width[i]))).join('  '));
	if (j === 0) console.log(width.map((w) => '-'.repeat(w)).join('  '));
}

// --- ratios against nginx ------------------------------------------------
const ref = (s) => scen.get(['-tlscat-1m', '-tlscat', '-1m-paced', '-1m',
	'-tls-hs', '-tls'].reduce((r, sfx) =>
	r || (s.name.endsWith(sfx) ? `nginx${sfx}` : null), null) || 'nginx');
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
		user_per_req: ratio(s.user_us_per_req, n.user_us_per_req),
		kernel_per_req: ratio(s.kernel_us_per_req, n.kernel_us_per_req),
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
		`p99 ${x(r.p99)}, cpu/req ${x(r.cpu_per_req)} (user ` +
		`${x(r.user_per_req)}, kernel ${x(r.kernel_per_req)})`);
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
// TLS: how each proxy's handshake was made, and whether a session resumed.
const tls = lines('tls.tsv').map((l) => {
	const [proxy, first, second, protocol, cipher, group, signature] =
		l.split('\t');
	return { proxy, first, second, protocol, cipher, group, signature,
		resumed: first === 'New' && second === 'Reused' };
});
for (const t of tls)
	console.log(`TLS ${t.proxy}: ${t.protocol} ${t.cipher} ${t.group} ` +
		`${t.signature}; session resumption: ${t.first} then ${t.second}`);
// Slow clients: key=value lines from bench/slowread.c.
const slow = lines('slow.tsv').map((l) => {
	const [name, proxy, kv] = l.split('\t');
	const o = { scenario: name, proxy };
	for (const w of (kv || '').split(' ')) {
		const i = w.indexOf('=');
		if (i > 0) o[w.slice(0, i)] = Number(w.slice(i + 1));
	}
	return o;
});
const sn = slow.find((o) => o.proxy === 'nginx');
for (const o of slow) {
	console.log(`slow ${o.scenario}: ${o.clients} clients, ${o.done} done, ` +
		`${o.errors} errors, ${o.unfinished} unfinished; RSS ` +
		`${f1(o.rss_before_kb / 1024)} MB -> peak ${f1(o.rss_peak_kb / 1024)} MB; ` +
		`first byte p50 ${ms(o.first_byte_p50_ms * 1000)}, max ` +
		`${ms(o.first_byte_max_ms * 1000)}; done p50 ${ms(o.done_p50_ms * 1000)}`);
	if (sn && o !== sn) {
		o.vs_nginx = { rss_peak: ratio(o.rss_peak_kb, sn.rss_peak_kb),
			first_byte_p50: ratio(o.first_byte_p50_ms, sn.first_byte_p50_ms) };
		console.log(`slow ${o.scenario} vs nginx: peak RSS ` +
			`${x(o.vs_nginx.rss_peak)}, first byte p50 ` +
			`${x(o.vs_nginx.first_byte_p50)}`);
	}
}
for (const n of notes) console.log(n);

// --- goals ---------------------------------------------------------------
const goals = [];
let issue = 6;
const goal = (name, value, ok, shown) => {
	goals.push({ issue, goal: name, value, met: ok });
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

// Issue 20: each against nginx in the same run.
console.log('\ngoals (issue 20):');
issue = 20;
const le = (r, k, lim, what) => goal(what, r ? r[k] : null,
	r && r[k] != null ? r[k] <= lim : null, r ? x(r[k]) : null);
const ge = (r, k, lim, what) => goal(what, r ? r[k] : null,
	r && r[k] != null ? r[k] >= lim : null, r ? x(r[k]) : null);
le(fr, 'cpu_per_req', 0.85, 'routed 4 KB: CPU/request <= 0.85x nginx');
ge(fr, 'rps', 1.1, 'routed 4 KB: req/s >= 1.1x nginx');
le(fr, 'p99', 1.0, 'routed 4 KB: p99 <= 1.0x nginx');
// The same routed 4 KB load is measured again in the workers part: floe
// with workers = 1 (floe routed's configuration) against nginx with one
// worker, the two in rounds of their own. The two measurements say how
// far these three ratios move for one code in one run.
const again = (a, b) => {
	const s = scen.get(a), n = scen.get(b);
	if (!s || !n)
		return null;
	const r = { rps: ratio(s.rps, n.rps), p99: ratio(s.p99_us, n.p99_us),
		cpu_per_req: ratio(s.cpu_us_per_req, n.cpu_us_per_req) };
	ratios[`${a} vs ${b}`] = r;
	return `req/s ${x(r.rps)}, p99 ${x(r.p99)}, CPU/request ${x(r.cpu_per_req)}`;
};
const a1 = again('floe-workers-1', 'nginx-workers-1'),
	a2 = again('floe-workers-1-batch', 'nginx-workers-1-batch');
if (a1)
	console.log('  (the same load in the workers rounds, floe workers = 1 ' +
		`against nginx's one worker: ${a1}` +
		(a2 ? `; under SCHED_BATCH ${a2})` : ')'));
const f1m = ratios['floe-routed-1m'], s1m = scen.get('floe-routed-1m'),
	n1m = scen.get('nginx-1m');
const rss1m = s1m && n1m ? { ratio: ratio(s1m.rss_kb, n1m.rss_kb) } : null;
le(rss1m, 'ratio', 2.0, `routed 1 MB, ${machine.conns || 32} clients: RSS after the rounds <= 2x nginx`);
// Flat out, the faster proxy can saturate the load CPU (wrk and the
// upstream share it): its p99 then holds wrk's own queue. Both figures
// are shown with how busy that CPU was; the paced clients offer both
// proxies the same load.
const busy = (a, b) => a && b ?
	` (load CPU ${f0(a.load_cpu_busy_pct)}% under floe, ` +
	`${f0(b.load_cpu_busy_pct)}% under nginx)` : '';
const fp = ratios['floe-routed-1m-paced'], sp = scen.get('floe-routed-1m-paced'),
	np = scen.get('nginx-1m-paced');
goal('routed 1 MB: p99 <= 1.0x nginx, clients flat out', f1m ? f1m.p99 : null,
	f1m ? f1m.p99 <= 1 : null, f1m ? x(f1m.p99) + busy(s1m, n1m) : null);
goal(`routed 1 MB: p99 <= 1.0x nginx, clients paced (${machine.pace_ms || 60} ms)`,
	fp ? fp.p99 : null, fp ? fp.p99 <= 1 : null,
	fp ? `${x(fp.p99)} at ${f0(sp.rps)} and ${f0(np.rps)} req/s` +
		busy(sp, np) : null);
le(f1m, 'cpu_per_req', 1.0, 'routed 1 MB: CPU/request <= 1.0x nginx');
const fsl = slow.find((o) => o.proxy === 'floe');
le(fsl && fsl.vs_nginx, 'rss_peak', 2.0,
	`${machine.slow_clients || 200} slow clients of 1 MB at ${((machine.slow_rate || 65536) / 1024).toFixed(0)} KB/s: peak RSS <= 2x nginx`);
const ft = ratios['floe-tls'], fh = ratios['floe-tls-hs'];
le(ft, 'cpu_per_req', 1.0, 'TLS 1.3 P-256 keep-alive: CPU/request <= 1.0x nginx');
ge(fh, 'rps', 1.0, 'TLS 1.3 P-256 full handshakes/s >= 1.0x nginx');
const tf = tls.find((t) => t.proxy === 'floe');
goal('TLS session resumption (ticket) works', tf ? `${tf.first} then ${tf.second}` : null,
	tf ? tf.resumed : null, tf ? `${tf.first} then ${tf.second}` : null);
const w1 = scen.get('floe-workers-1'), w2 = scen.get('floe-workers-2');
// Instructions per request of each (bench/callgrind.sh CG_WORKERS): "W IR".
const wir = Object.fromEntries(lines('workers_ir').map((l) => l.split(' ')
	.map(Number)));
// Two workers against one of the same proxy, medians and round by round
// (the rounds ran interleaved).
const vsOne = (a1, a2) => {
	if (!a1 || !a2)
		return null;
	const r1 = new Map(a1.rounds.map((o) => [o.round, o]));
	const both = a2.rounds.filter((o) => r1.has(o.round));
	return { cpu_per_req: ratio(a2.cpu_us_per_req, a1.cpu_us_per_req),
		rps: ratio(a2.rps, a1.rps), p99: ratio(a2.p99_us, a1.p99_us),
		by_round: { cpu_per_req: both.map((o) => ratio(o.cpu_us_per_req,
			r1.get(o.round).cpu_us_per_req)) } };
};
const wd = vsOne(w1, w2);
// nginx with worker_processes 1 and 2 on the same proxy CPU, in the same
// rounds: what a second process on one CPU costs a proxy that is not floe.
const nd = vsOne(scen.get('nginx-workers-1'), scen.get('nginx-workers-2'));
if (wd && wir[1] && wir[2]) {
	wd.ir_per_req = ratio(wir[2], wir[1]);
	wd.ir = { workers_1: wir[1], workers_2: wir[2] };
}
goal('workers = 2 within 5% of workers = 1 (CPU/request)',
	wd ? wd.cpu_per_req : null, wd ? Math.abs(wd.cpu_per_req - 1) <= 0.05 : null,
	wd ? `CPU/request ${x(wd.cpu_per_req)}, req/s ${x(wd.rps)}, p99 ` +
		`${x(wd.p99)} (proxy CPUs: ${machine.proxy_cpu})` +
		(wd.ir_per_req ? `; instructions/request ${x(wd.ir_per_req)} ` +
			`(${wir[2]} against ${wir[1]}, callgrind)` : '') : null);
if (wd)
	ratios['floe-workers-2 vs floe-workers-1'] = wd;
// How each two-worker proxy spread its CPU over its processes in the
// rounds: "SCENARIO<TAB>[master T0 ]T1 T2 of ALL" (ticks).
for (const l of lines('workers_split.tsv')) {
	const [name, split] = l.split('\t');
	const r = name === 'floe-workers-2' ? wd : name === 'nginx-workers-2' ?
		nd : null;
	if (r)
		r.cpu_ticks_by_process = split;
	console.log(`  (${name}: CPU ticks by process, ${split})`);
}
if (nd) {
	ratios['nginx-workers-2 vs nginx-workers-1'] = nd;
	console.log(`  (nginx, worker_processes 2 against 1 on the same CPU: ` +
		`CPU/request ${x(nd.cpu_per_req)}, req/s ${x(nd.rps)}, p99 ` +
		`${x(nd.p99)}; round by round ${nd.by_round.cpu_per_req.map(fx)
			.join(' ')}, floe's ${wd ? wd.by_round.cpu_per_req.map(fx)
			.join(' ') : 'n/a'})`);
}
// The same four under SCHED_BATCH (no wakeup preemption), in rounds of
// their own: what the switching between two workers on one CPU costs.
const wdb = vsOne(scen.get('floe-workers-1-batch'),
	scen.get('floe-workers-2-batch'));
const ndb = vsOne(scen.get('nginx-workers-1-batch'),
	scen.get('nginx-workers-2-batch'));
if (wdb && ndb) {
	ratios['floe-workers-2-batch vs floe-workers-1-batch'] = wdb;
	ratios['nginx-workers-2-batch vs nginx-workers-1-batch'] = ndb;
	console.log(`  (under SCHED_BATCH, no wakeup preemption: floe 2 against ` +
		`1 CPU/request ${x(wdb.cpu_per_req)}, p99 ${x(wdb.p99)}, round by ` +
		`round ${wdb.by_round.cpu_per_req.map(fx).join(' ')}; nginx ` +
		`${x(ndb.cpu_per_req)}, p99 ${x(ndb.p99)}, round by round ` +
		`${ndb.by_round.cpu_per_req.map(fx).join(' ')})`);
}
// Context switches a request of each, blocked + preempted.
const sw = (n) => {
	const s = scen.get(n);
	return s && s.switches_blocked_per_req != null &&
		!Number.isNaN(s.switches_blocked_per_req) ?
		`${s.switches_blocked_per_req.toFixed(3)}+` +
		`${s.switches_preempted_per_req.toFixed(3)}` : 'n/a';
};
if (wd && nd)
	console.log('  (context switches a request, blocked + preempted: ' +
		['floe-workers-1', 'floe-workers-2', 'nginx-workers-1',
			'nginx-workers-2'].map((n) => `${n} ${sw(n)}` +
			(wdb ? ` (batch ${sw(`${n}-batch`)})` : '')).join(', ') + ')');
if (fh)
	console.log(`  (full handshakes: CPU/handshake ${x(fh.cpu_per_req)} ` +
		`nginx's; req/s is bounded by the one client CPU doing its half of ` +
		`every handshake)`);
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
	tls,
	slow,
	notes,
};
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
console.log(`\nwrote ${out} (${machine.duration_s} s run)`);
