// floe test catalog: the test hooks (request log, fault injection) and
// the catalog authentication, checked by independent verifiers.
'use strict';

const http = require('node:http');
const path = require('node:path');
const crypto = require('node:crypto');
const { ERR_TYPES, HttpError, bad } = require('./errors.js');
const { parseJson, readBody, send, sendError } = require('./httpio.js');
const { clone, idText } = require('./json.js');

// ---------------------------------------------------------------------------
// Test hooks: request log and fault injection.

class Faults {
	constructor() {
		this.rules = [];
	}
	add(r) {
		if (typeof r !== 'object' || r === null) throw bad('fault must be an object');
		const rule = {
			match: typeof r.match === 'string' ? r.match : '',
			delay_ms: Number(r.delay_ms) || 0,
			status: r.status ? Number(r.status) : 0,
			reset: !!r.reset,
			garbage: !!r.garbage,
			body: typeof r.body === 'string' ? r.body : null,
			count: r.count === undefined || r.count === null ? Infinity : Number(r.count),
			hits: 0,
		};
		if (rule.status && (rule.status < 400 || rule.status > 599)) throw bad('fault status must be 4xx or 5xx');
		if (!(rule.count > 0)) throw bad('fault count must be positive');
		this.rules.push(rule);
		return rule;
	}
	// The first live rule matching URL, used up by one.
	take(url) {
		for (const r of this.rules) {
			if (r.count > 0 && url.includes(r.match)) {
				r.count--;
				r.hits++;
				return r;
			}
		}
		return null;
	}
	list() {
		return this.rules.map((r) => ({ ...r, count: r.count === Infinity ? null : r.count }));
	}
}

async function testHook(cat, req, res, segs, state) {
	const what = segs[0];
	if (what === 'requests') {
		if (req.method === 'GET') return send(res, 200, { requests: state.requests });
		if (req.method === 'DELETE') {
			state.requests.length = 0;
			return send(res, 204);
		}
	}
	if (what === 'fault') {
		if (req.method === 'POST') {
			const rule = state.faults.add(parseJson(await readBody(req)));
			return send(res, 200, { fault: { ...rule, count: rule.count === Infinity ? null : rule.count } });
		}
		if (req.method === 'GET') return send(res, 200, { faults: state.faults.list() });
		if (req.method === 'DELETE') {
			state.faults.rules = [];
			return send(res, 204);
		}
	}
	if (what === 'config' && req.method === 'POST') {
		// Extra /v1/config defaults, as a catalog whose settings changed.
		cat.extraDefaults = parseJson(await readBody(req));
		return send(res, 200, { defaults: cat.extraDefaults });
	}
	if (what === 'files' && req.method === 'GET') {
		// Table roots -> the URL path that serves them.
		const roots = {};
		for (const [root, dir] of cat.fixtureRoots) roots[root] = `/files/${dir}`;
		return send(res, 200, { roots, s3: '/files/s3/' });
	}
	if ((what === 'advance' || what === 'summary') && req.method === 'POST') {
		// A new current snapshot (advance: timestamp-ms = now, as a
		// dual-write job commits) or an edited summary of the current one;
		// either way a new metadata file, so the ETag changes.
		const b = parseJson(await readBody(req));
		const parts = String(b.table || '').split('.');
		const t = cat.needTable(parts.slice(0, -1), parts[parts.length - 1]);
		const md = clone(t.metadata);
		const cur = (md.snapshots || []).find((x) => idText(x['snapshot-id']) === idText(md['current-snapshot-id']));
		if (what === 'advance') {
			cat.snapSeq = (cat.snapSeq || 0) + 1;
			const snap = {
				...(cur ? clone(cur) : { 'sequence-number': 0, summary: { operation: 'append' } }),
				'snapshot-id': Date.now() * 1000 + (cat.snapSeq % 1000),
				'timestamp-ms': Date.now(),
			};
			if (cur) snap['parent-snapshot-id'] = cur['snapshot-id'];
			snap['sequence-number'] = (md['last-sequence-number'] || 0) + 1;
			md['last-sequence-number'] = snap['sequence-number'];
			md.snapshots = [...(md.snapshots || []), snap];
			md['current-snapshot-id'] = snap['snapshot-id'];
			md.refs = { ...(md.refs || {}), main: { 'snapshot-id': snap['snapshot-id'], type: 'branch' } };
			md['snapshot-log'] = [...(md['snapshot-log'] || []), { 'timestamp-ms': snap['timestamp-ms'], 'snapshot-id': snap['snapshot-id'] }];
		} else {
			if (!cur) throw bad('The table has no current snapshot');
			cur.summary = cur.summary || {};
			for (const [k, v] of Object.entries(b)) {
				if (k === 'table') continue;
				if (v === null) delete cur.summary[k];
				else cur.summary[k] = String(v);
			}
		}
		cat.commitMetadata(t, md);
		const now = (md.snapshots || []).find((x) => idText(x['snapshot-id']) === idText(md['current-snapshot-id']));
		return send(res, 200, { 'metadata-location': t.location, snapshot: now });
	}
	if (what === 'tables' && req.method === 'GET') {
		const out = [...cat.tables.values()].map((t) => ({
			identifier: [...t.ns, t.name].join('.'),
			'metadata-location': t.location,
			'current-snapshot-id': t.metadata['current-snapshot-id'],
		}));
		return send(res, 200, { name: cat.name, tables: out });
	}
	return sendError(res, 404, 'NotFoundException', `No test hook ${req.method} ${req.url}`);
}

// Carry out fault RULE on this request. True when the request is consumed.
async function applyFault(rule, req, res) {
	if (rule.delay_ms > 0) await new Promise((r) => setTimeout(r, rule.delay_ms));
	if (rule.reset) {
		const s = req.socket;
		if (typeof s.resetAndDestroy === 'function') s.resetAndDestroy();
		else s.destroy();
		return true;
	}
	if (rule.garbage) {
		const junk = Buffer.concat([Buffer.from('\x00\xffGARBAGE\r\n\x16\x03\x01 not http at all \x7f'), crypto.randomBytes(64)]);
		req.socket.end(junk);
		return true;
	}
	if (rule.body !== null) {
		// A 200 that says it is JSON and is not (a corrupt catalog), or
		// this body with the rule's status.
		const b = Buffer.from(rule.body, 'latin1');
		res.writeHead(rule.status || 200, { 'Content-Type': 'application/json', 'Content-Length': b.length });
		res.end(b);
		return true;
	}
	if (rule.status) {
		const type = ERR_TYPES[rule.status] || (rule.status >= 500 ? 'InternalServerError' : 'BadRequestException');
		const h = rule.status === 503 ? { 'Retry-After': '1' } : {};
		send(res, rule.status, { error: { message: `Injected fault (${rule.status})`, type, code: rule.status } }, h);
		return true;
	}
	return false;
}

// ---------------------------------------------------------------------------
// Catalog authentication, checked by independent verifiers.

// Bearer tokens issued by a token server (tests/catauth/tokens.py): each
// new one is looked up at its /introspect and then trusted until it expires.
class Introspect {
	constructor(url) {
		this.url = url;
		this.known = new Map(); // Authorization value -> expiry (ms)
	}
	async check(req) {
		const a = req.headers.authorization || '';
		const exp = this.known.get(a);
		if (exp !== undefined && exp > Date.now()) return;
		this.known.delete(a);
		const r = await new Promise((resolve, reject) => {
			const q = http.get(this.url, { headers: { authorization: a } }, (res) => {
				let b = '';
				res.on('data', (d) => (b += d));
				res.on('end', () => resolve({ status: res.statusCode, body: b }));
			});
			q.on('error', reject);
		});
		if (r.status !== 200) throw new HttpError(401, 'NotAuthorizedException', 'Not authorized: unknown or expired token');
		this.known.set(a, Date.now() + JSON.parse(r.body).expires_in * 1000);
	}
}

// AWS SigV4 signatures, recomputed with botocore by tests/catauth/sigcheck.py
// (one process, a JSON line per request). A refusal is AWS's 403.
class SigCheck {
	constructor(file) {
		const script = path.resolve(__dirname, '../catauth/sigcheck.py');
		this.p = require('node:child_process').spawn('/usr/bin/python3', [script, file], { stdio: ['pipe', 'pipe', 'inherit'] });
		this.waiting = [];
		let buf = '';
		this.p.stdout.on('data', (d) => {
			buf += d;
			let nl;
			while ((nl = buf.indexOf('\n')) >= 0) {
				const line = buf.slice(0, nl);
				buf = buf.slice(nl + 1);
				this.waiting.shift()(JSON.parse(line));
			}
		});
		process.on('exit', () => this.p.kill());
	}
	async check(req, record) {
		const r = await new Promise((resolve) => {
			this.waiting.push(resolve);
			this.p.stdin.write(
				JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: req.rawBody.toString('base64') }) + '\n'
			);
		});
		record.sigv4 = r.ok ? 'ok' : r.why;
		if (!r.ok) throw new HttpError(403, 'InvalidSignatureException', `Signature refused: ${r.why}`);
	}
}

module.exports = { Faults, testHook, applyFault, Introspect, SigCheck };
