#!/usr/bin/env node
// floe test catalog: a small but real Iceberg REST catalog (node 20, no
// dependencies) serving real table metadata from the fixtures, for floe's
// integration tests, e2e tests and demo. It keeps everything in memory,
// records every request for the tests (/_test/requests) and can inject
// faults (/_test/fault). See README.md beside this file.
'use strict';

const http = require('node:http');
const https = require('node:https');
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { HttpError, bad, exists, noNs, noTable, noView } = require('./errors.js');
const { Faults, Introspect, SigCheck, applyFault, testHook } = require('./hooks.js');
const { ENDPOINTS, decodeLevel, decodeNamespace, paginate, parseJson, readBody, send, sendError } = require('./httpio.js');
const { BigNum, clone, jparse, jstringify } = require('./json.js');
const { checkRequirement, etagFor, etagMatches, makeView, metadataFor, newMetadata, planCommit } = require('./metadata.js');

// ---------------------------------------------------------------------------
// Command line.

function usage(msg) {
	if (msg) process.stderr.write(`catalog: ${msg}\n`);
	process.stderr.write(
		'usage: catalog.js --port P --name warehouse|lakehouse [--prefix PFX] ' +
			'[--data DIR] [--fixtures DIR] [--token TOKEN] [--introspect URL] [--sigv4 FILE]\n' +
			'       [--tls-cert PEM --tls-key PEM]\n'
	);
	process.exit(2);
}

function parseArgs(argv) {
	const o = {
		port: null,
		name: null,
		prefix: null,
		data: null,
		token: null,
		introspect: null,
		sigv4: null,
		tlsCert: null,
		tlsKey: null,
		fixtures: path.resolve(__dirname, '../fixtures/iceberg'),
	};
	for (let k = 0; k < argv.length; k++) {
		const a = argv[k];
		const next = () => {
			if (k + 1 >= argv.length) usage(`${a} needs a value`);
			return argv[++k];
		};
		if (a === '--port') o.port = Number(next());
		else if (a === '--name') o.name = next();
		else if (a === '--prefix') o.prefix = next();
		else if (a === '--data') o.data = next();
		else if (a === '--fixtures') o.fixtures = path.resolve(next());
		else if (a === '--token') o.token = next();
		else if (a === '--introspect') o.introspect = next();
		else if (a === '--sigv4') o.sigv4 = next();
		else if (a === '--tls-cert') o.tlsCert = next();
		else if (a === '--tls-key') o.tlsKey = next();
		else if (a === '-h' || a === '--help') usage();
		else usage(`unknown argument ${a}`);
	}
	if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) usage('--port is required');
	if (o.name !== 'warehouse' && o.name !== 'lakehouse') usage('--name must be warehouse or lakehouse');
	if (o.prefix === '') o.prefix = null;
	if (!o.tlsCert !== !o.tlsKey) usage('--tls-cert and --tls-key go together');
	if (!fs.existsSync(o.fixtures)) usage(`fixtures not found: ${o.fixtures}`);
	return o;
}

// ---------------------------------------------------------------------------
// The catalog state.

const nsKey = (levels) => levels.join('\x1f');
const tKey = (levels, name) => nsKey(levels) + '\x00' + name;

class Catalog {
	constructor(opts) {
		this.opts = opts;
		this.name = opts.name;
		this.namespaces = new Map(); // key -> {levels, properties}
		this.tables = new Map(); // key -> {ns, name, location(metadata-location), metadata}
		this.views = new Map(); // key -> {ns, name, location, metadata}
		this.memfiles = new Map(); // "bucket/key" -> text (metadata written here)
		this.fixtureRoots = new Map(); // "bucket/key-prefix" -> fixture dir name
		this.staged = new Map(); // staged creates: key -> {metadata}
		this.plans = new Set();
		this.seq = 0;
		this.scanFixtures();
	}

	// Learn every fixture's table root ("bucket/path") from its metadata.
	scanFixtures() {
		for (const dir of fs.readdirSync(this.opts.fixtures)) {
			const mdir = path.join(this.opts.fixtures, dir, 'metadata');
			if (!fs.existsSync(mdir)) continue;
			const f = fs.readdirSync(mdir).find((x) => x.endsWith('.metadata.json'));
			if (!f) continue;
			const md = jparse(fs.readFileSync(path.join(mdir, f), 'utf8'));
			const root = stripScheme(md.location);
			if (root) this.fixtureRoots.set(root.replace(/\/+$/, ''), dir);
		}
	}

	// Read a storage object ("s3a://b/k", "s3://b/k" or "b/k"): written
	// metadata first, then fixture files. Returns a Buffer or null.
	readObject(loc) {
		const key = stripScheme(loc);
		if (key === null) return null;
		if (this.memfiles.has(key)) return Buffer.from(this.memfiles.get(key));
		for (const [root, dir] of this.fixtureRoots) {
			if (key.startsWith(root + '/')) {
				const rel = key.slice(root.length + 1);
				return readInside(path.join(this.opts.fixtures, dir), rel);
			}
		}
		return null;
	}

	// Store written metadata (and mirror it under --data when given).
	writeObject(loc, text) {
		const key = stripScheme(loc);
		this.memfiles.set(key, text);
		if (this.opts.data) {
			const p = path.join(this.opts.data, this.name, key);
			fs.mkdirSync(path.dirname(p), { recursive: true });
			fs.writeFileSync(p, text);
		}
	}

	addNamespace(levels, properties = {}) {
		this.namespaces.set(nsKey(levels), { levels, properties: { ...properties } });
	}

	needNs(levels) {
		const ns = this.namespaces.get(nsKey(levels));
		if (!ns) throw noNs(levels);
		return ns;
	}

	needTable(levels, name) {
		this.needNs(levels);
		const t = this.tables.get(tKey(levels, name));
		if (!t) throw noTable(levels, name);
		return t;
	}

	// Register fixture FIXTURE's metadata file FILE as table NS.NAME.
	preload(levels, name, fixture, file) {
		const mdir = path.join(this.opts.fixtures, fixture, 'metadata');
		const text = fs.readFileSync(path.join(mdir, file), 'utf8');
		const metadata = jparse(text);
		const location = `${metadata.location}/metadata/${file}`;
		this.tables.set(tKey(levels, name), { ns: levels, name, location, metadata });
	}

	// A metadata location for the next version of a table at ROOT.
	nextMetadataLocation(root) {
		this.seq++;
		const n = String(this.seq).padStart(5, '0');
		return `${root.replace(/\/+$/, '')}/metadata/${n}-${crypto.randomUUID()}.metadata.json`;
	}

	// Write METADATA as a new file and make it the table's current version.
	commitMetadata(t, metadata) {
		const loc = this.nextMetadataLocation(metadata.location);
		if (t.location) {
			metadata['metadata-log'] = [
				...(metadata['metadata-log'] || []),
				{ 'timestamp-ms': t.metadata['last-updated-ms'], 'metadata-file': t.location },
			];
		}
		metadata['last-updated-ms'] = Date.now();
		this.writeObject(loc, jstringify(metadata));
		t.location = loc;
		t.metadata = metadata;
	}
}

// "s3a://bucket/key" -> "bucket/key"; a schemeless path is kept.
function stripScheme(loc) {
	if (typeof loc !== 'string') return null;
	const m = /^[a-z][a-z0-9+.-]*:\/\/(.*)$/i.exec(loc);
	const key = m ? m[1] : loc;
	return key.replace(/^\/+/, '');
}

// Read REL under DIR, refusing anything that escapes it. Buffer or null.
function readInside(dir, rel) {
	const p = path.resolve(dir, rel);
	if (!p.startsWith(path.resolve(dir) + path.sep)) return null;
	try {
		const st = fs.statSync(p);
		if (!st.isFile()) return null;
		return fs.readFileSync(p);
	} catch {
		return null;
	}
}

// The preloaded tables. The same name holds different rows on each side:
// the warehouse serves older versions of the bunnies tables than the
// lakehouse (e2e tests read the rows through icebird to tell them apart).
function preloadAll(cat) {
	cat.addNamespace(['db'], { owner: 'floe-tests', side: cat.name });
	cat.preload(['db'], 'athena', 'athena_example', '00001-aaf0d033-d06b-43c7-be60-67f83abd4aca.metadata.json');
	if (cat.name === 'warehouse') {
		cat.preload(['db'], 'bunnies', 'spark_bunnies', 'v2.metadata.json');
		cat.preload(['db'], 'java_bunnies', 'java_bunnies', 'v3.metadata.json');
		cat.preload(['db'], 'wh_bunnies', 'spark_bunnies', 'v3.metadata.json');
		cat.addNamespace(['wh_only'], { side: 'warehouse' });
		cat.preload(['wh_only'], 'legacy_bunnies', 'java_bunnies', 'v2.metadata.json');
		cat.views.set(tKey(['db'], 'bunny_names'), makeView(cat, ['db'], 'bunny_names'));
	} else {
		cat.preload(['db'], 'bunnies', 'spark_bunnies', 'v5.metadata.json');
		cat.preload(['db'], 'java_bunnies', 'java_bunnies', 'v5.metadata.json');
		cat.preload(['db'], 'lh_bunnies', 'spark_bunnies', 'v4.metadata.json');
		cat.addNamespace(['lh_only'], { side: 'lakehouse' });
		cat.preload(['lh_only'], 'new_bunnies', 'java_bunnies', 'v4.metadata.json');
	}
}

// ---------------------------------------------------------------------------
// The REST API.

// Route one REST request (path below /v1, split in raw segments).
async function api(cat, req, res, segs, q) {
	const m = req.method;
	const body = async () => parseJson(req.rawBody);

	if (segs.length === 1 && segs[0] === 'config' && m === 'GET') {
		const wh = q.get('warehouse');
		const defaults = {
			's3.endpoint': `http://s3.${cat.name}.floe.test`,
			'client.region': cat.name === 'warehouse' ? 'eu-west-1' : 'eu-central-1',
			'floe-test.catalog': cat.name,
			'rest-page-size': '100',
		};
		if (wh !== null) defaults.warehouse = wh;
		Object.assign(defaults, cat.extraDefaults || {});
		const overrides = {};
		if (cat.opts.prefix) overrides.prefix = cat.opts.prefix;
		return send(res, 200, { defaults, overrides, endpoints: ENDPOINTS });
	}

	// Strip the prefix the config announced (strict: floe must rewrite it).
	if (cat.opts.prefix) {
		if (segs[0] !== encodeURIComponent(cat.opts.prefix) && decodeLevel(segs[0] || '') !== cat.opts.prefix)
			throw new HttpError(404, 'NoSuchWarehouseException', `Unknown prefix: ${segs[0] || '(none)'}`);
		segs = segs.slice(1);
	}
	const [s0, s1, s2, s3, s4, s5] = segs;
	const n = segs.length;

	if (s0 === 'tables' && s1 === 'rename' && n === 2 && m === 'POST') return rename(cat, res, await body(), 'tables');
	if (s0 === 'views' && s1 === 'rename' && n === 2 && m === 'POST') return rename(cat, res, await body(), 'views');
	if (s0 === 'transactions' && s1 === 'commit' && n === 2 && m === 'POST') return txCommit(cat, res, await body());
	if (s0 !== 'namespaces') throw new HttpError(404, 'NotFoundException', `No route for ${m} ${req.url}`);

	if (n === 1) {
		if (m === 'GET') return listNamespaces(cat, res, q);
		if (m === 'POST') return createNamespace(cat, res, await body());
		throw notAllowed(m);
	}
	const levels = decodeNamespace(s1);
	if (n === 2) {
		if (m === 'GET' || m === 'HEAD') {
			const ns = cat.needNs(levels);
			if (m === 'HEAD') return send(res, 204);
			return send(res, 200, { namespace: ns.levels, properties: ns.properties });
		}
		if (m === 'DELETE') return dropNamespace(cat, res, levels);
		throw notAllowed(m);
	}
	if (n === 3 && s2 === 'properties' && m === 'POST') return nsProperties(cat, res, levels, await body());
	if (n === 3 && s2 === 'register' && m === 'POST') return registerTable(cat, req, res, levels, await body());
	if (s2 === 'tables' || s2 === 'views') {
		const kind = s2;
		if (n === 3) {
			if (m === 'GET') return listObjects(cat, res, levels, q, kind);
			if (m === 'POST') {
				const b = await body();
				return kind === 'tables' ? createTable(cat, req, res, levels, b) : createView(cat, res, levels, b);
			}
			throw notAllowed(m);
		}
		const name = decodeLevel(s3);
		if (kind === 'views') {
			if (n !== 4) throw new HttpError(404, 'NotFoundException', `No route for ${m} ${req.url}`);
			return viewOp(cat, req, res, levels, name, m, m === 'POST' ? await body() : null);
		}
		if (n === 4) {
			if (m === 'GET') return loadTable(cat, req, res, levels, name, q);
			if (m === 'HEAD') {
				cat.needTable(levels, name);
				return send(res, 204);
			}
			if (m === 'POST') return commitTable(cat, res, levels, name, await body());
			if (m === 'DELETE') {
				cat.needTable(levels, name);
				cat.tables.delete(tKey(levels, name));
				return send(res, 204);
			}
			throw notAllowed(m);
		}
		const t = cat.needTable(levels, name);
		if (n === 5 && s4 === 'credentials' && m === 'GET') return send(res, 200, credentials(cat, t));
		if (n === 5 && s4 === 'metrics' && m === 'POST') {
			await body();
			return send(res, 204);
		}
		if (n === 5 && s4 === 'plan' && m === 'POST') {
			const id = `plan-${cat.name}-${crypto.randomUUID()}`;
			cat.plans.add(id);
			return send(res, 200, { status: 'completed', 'plan-id': id, 'plan-tasks': [], 'file-scan-tasks': [], 'delete-files': [] });
		}
		if (n === 6 && s4 === 'plan') {
			const id = decodeLevel(s5);
			if (!cat.plans.has(id)) throw new HttpError(404, 'NoSuchPlanIdException', `No such plan: ${id}`);
			if (m === 'GET') return send(res, 200, { status: 'completed', 'plan-tasks': [], 'file-scan-tasks': [], 'delete-files': [] });
			if (m === 'DELETE') {
				cat.plans.delete(id);
				return send(res, 204);
			}
			throw notAllowed(m);
		}
		if (n === 5 && s4 === 'tasks' && m === 'POST') {
			await body();
			return send(res, 200, { 'plan-tasks': [], 'file-scan-tasks': [], 'delete-files': [] });
		}
		if (n === 5 && s4 === 'sign' && m === 'POST') {
			const b = await body();
			return send(res, 200, { uri: b.uri, headers: { authorization: [`AWS4-HMAC-SHA256 fake-${cat.name}`] } });
		}
	}
	throw new HttpError(404, 'NotFoundException', `No route for ${m} ${req.url}`);
}

const notAllowed = (m) => new HttpError(405, 'BadRequestException', `Method not allowed: ${m}`);

function listNamespaces(cat, res, q) {
	let parent = [];
	if (q.has('parent') && q.get('parent') !== '') {
		parent = q.get('parent').split('\x1f');
		cat.needNs(parent);
	}
	const out = [];
	const seen = new Set();
	for (const ns of cat.namespaces.values()) {
		const l = ns.levels;
		if (l.length <= parent.length || parent.some((p, i) => l[i] !== p)) continue;
		const child = l.slice(0, parent.length + 1);
		const k = nsKey(child);
		if (!seen.has(k)) {
			seen.add(k);
			out.push(child);
		}
	}
	out.sort((a, b) => (nsKey(a) < nsKey(b) ? -1 : nsKey(a) > nsKey(b) ? 1 : 0));
	const { page, next } = paginate(out, q);
	return send(res, 200, { namespaces: page, 'next-page-token': next });
}

function createNamespace(cat, res, b) {
	if (!Array.isArray(b.namespace) || b.namespace.length === 0 || b.namespace.some((x) => typeof x !== 'string'))
		throw bad('namespace must be a non-empty array of strings');
	if (cat.namespaces.has(nsKey(b.namespace))) throw exists(`Namespace ${b.namespace.join('.')}`);
	cat.addNamespace(b.namespace, b.properties || {});
	return send(res, 200, { namespace: b.namespace, properties: b.properties || {} });
}

function dropNamespace(cat, res, levels) {
	cat.needNs(levels);
	const k = nsKey(levels);
	for (const t of [...cat.tables.values(), ...cat.views.values()]) {
		if (nsKey(t.ns) === k)
			throw new HttpError(409, 'NamespaceNotEmptyException', `Namespace ${levels.join('.')} is not empty`);
	}
	cat.namespaces.delete(k);
	return send(res, 204);
}

function nsProperties(cat, res, levels, b) {
	const ns = cat.needNs(levels);
	const removals = b.removals || [];
	const updates = b.updates || {};
	const dup = removals.filter((k) => k in updates);
	if (dup.length) throw new HttpError(422, 'UnprocessableEntityException', `Keys both updated and removed: ${dup.join(', ')}`);
	const removed = [];
	const missing = [];
	for (const k of removals) {
		if (k in ns.properties) {
			delete ns.properties[k];
			removed.push(k);
		} else missing.push(k);
	}
	Object.assign(ns.properties, updates);
	return send(res, 200, { updated: Object.keys(updates), removed, missing });
}

function listObjects(cat, res, levels, q, kind) {
	cat.needNs(levels);
	const k = nsKey(levels);
	const map = kind === 'tables' ? cat.tables : cat.views;
	const ids = [...map.values()]
		.filter((t) => nsKey(t.ns) === k)
		.map((t) => ({ namespace: t.ns, name: t.name }))
		.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
	const { page, next } = paginate(ids, q);
	return send(res, 200, { identifiers: page, 'next-page-token': next });
}

// The LoadTableResult for table T.
function loadResult(cat, t, mode) {
	return {
		'metadata-location': t.location,
		metadata: metadataFor(t.metadata, mode),
		config: { 'floe-test.side': cat.name, 'floe-test.table': [...t.ns, t.name].join('.') },
	};
}

function credentials(cat, t) {
	return {
		'storage-credentials': [
			{
				prefix: t.metadata.location,
				config: {
					's3.access-key-id': `AKIA${cat.name.toUpperCase()}TEST`,
					's3.secret-access-key': `fake-secret-${cat.name}`,
					's3.session-token': `fake-session-${cat.name}`,
				},
			},
		],
	};
}

function withCredentials(cat, req, t, result) {
	const d = req.headers['x-iceberg-access-delegation'] || '';
	if (d.split(',').map((s) => s.trim()).includes('vended-credentials'))
		result['storage-credentials'] = credentials(cat, t)['storage-credentials'];
	return result;
}

function loadTable(cat, req, res, levels, name, q) {
	const t = cat.needTable(levels, name);
	const mode = q.get('snapshots') || 'all';
	if (mode !== 'all' && mode !== 'refs') throw bad(`Invalid snapshots mode: ${mode}`);
	const etag = etagFor(t, mode);
	if (etagMatches(req.headers['if-none-match'], etag)) {
		res.writeHead(304, { ETag: etag });
		return res.end();
	}
	return send(res, 200, withCredentials(cat, req, t, loadResult(cat, t, mode)), { ETag: etag });
}

function createTable(cat, req, res, levels, b) {
	cat.needNs(levels);
	const k = tKey(levels, b.name);
	if (cat.tables.has(k) || cat.views.has(k)) throw exists(`Table ${[...levels, b.name].join('.')}`);
	const md = newMetadata(cat, levels, b);
	const t = { ns: levels, name: b.name, location: null, metadata: md };
	if (b['stage-create']) {
		const r = { 'metadata-location': null, metadata: md, config: { 'floe-test.side': cat.name } };
		return send(res, 200, withCredentials(cat, req, t, r));
	}
	cat.commitMetadata(t, md);
	cat.tables.set(k, t);
	return send(res, 200, withCredentials(cat, req, t, loadResult(cat, t, 'all')), { ETag: etagFor(t, 'all') });
}

function registerTable(cat, req, res, levels, b) {
	cat.needNs(levels);
	if (typeof b.name !== 'string' || !b.name) throw bad('Missing table name');
	if (typeof b['metadata-location'] !== 'string') throw bad('Missing metadata-location');
	const k = tKey(levels, b.name);
	if ((cat.tables.has(k) && !b.overwrite) || cat.views.has(k)) throw exists(`Table ${[...levels, b.name].join('.')}`);
	const buf = cat.readObject(b['metadata-location']);
	if (!buf) throw bad(`Cannot read metadata file: ${b['metadata-location']}`);
	let md;
	try {
		md = jparse(buf.toString('utf8'));
	} catch (e) {
		throw bad(`Invalid metadata file ${b['metadata-location']}: ${e.message}`);
	}
	const t = { ns: levels, name: b.name, location: b['metadata-location'], metadata: md };
	cat.tables.set(k, t);
	return send(res, 200, withCredentials(cat, req, t, loadResult(cat, t, 'all')), { ETag: etagFor(t, 'all') });
}

function commitTable(cat, res, levels, name, b) {
	cat.needNs(levels);
	const k = tKey(levels, name);
	const t = cat.tables.get(k);
	const create = (b.requirements || []).some((r) => r.type === 'assert-create');
	if (!t && !create) throw noTable(levels, name);
	let md;
	if (t) md = planCommit(t.metadata, b);
	else {
		// Finishing a stage-create: the updates build the table from nothing.
		for (const r of b.requirements) checkRequirement(null, r);
		md = planCommit(stagedBase(cat, levels, name, b), { updates: b.updates });
	}
	const target = t || { ns: levels, name, location: null, metadata: md };
	cat.commitMetadata(target, md);
	cat.tables.set(k, target);
	return send(res, 200, { 'metadata-location': target.location, metadata: md }, { ETag: etagFor(target, 'all') });
}

// An empty table to apply a stage-create's updates to.
function stagedBase(cat, levels, name, b) {
	const md = newMetadata(cat, levels, { name, schema: { type: 'struct', fields: [] } });
	md.schemas = [];
	md['current-schema-id'] = -1;
	md['last-column-id'] = 0;
	md['partition-specs'] = [];
	md['sort-orders'] = [];
	for (const u of b.updates || []) if (u.action === 'set-location') md.location = u.location;
	return md;
}

function rename(cat, res, b, kind) {
	const src = b.source;
	const dst = b.destination;
	if (!src || !dst || !Array.isArray(src.namespace) || !Array.isArray(dst.namespace) || !src.name || !dst.name)
		throw bad('rename needs source and destination identifiers');
	const map = kind === 'tables' ? cat.tables : cat.views;
	cat.needNs(src.namespace);
	const sk = tKey(src.namespace, src.name);
	const t = map.get(sk);
	if (!t) throw kind === 'tables' ? noTable(src.namespace, src.name) : noView(src.namespace, src.name);
	cat.needNs(dst.namespace);
	const dk = tKey(dst.namespace, dst.name);
	if (cat.tables.has(dk) || cat.views.has(dk)) throw exists(`${[...dst.namespace, dst.name].join('.')}`);
	map.delete(sk);
	t.ns = dst.namespace;
	t.name = dst.name;
	map.set(dk, t);
	return send(res, 204);
}

function txCommit(cat, res, b) {
	const changes = b['table-changes'];
	if (!Array.isArray(changes) || changes.length === 0) throw bad('table-changes must be a non-empty array');
	const planned = [];
	for (const c of changes) {
		const id = c.identifier;
		if (!id || !Array.isArray(id.namespace) || !id.name) throw bad('every table change needs an identifier');
		const t = cat.needTable(id.namespace, id.name);
		planned.push([t, planCommit(t.metadata, c)]);
	}
	for (const [t, md] of planned) cat.commitMetadata(t, md);
	return send(res, 204);
}

function createView(cat, res, levels, b) {
	cat.needNs(levels);
	if (typeof b.name !== 'string' || !b.name) throw bad('Missing view name');
	const k = tKey(levels, b.name);
	if (cat.tables.has(k) || cat.views.has(k)) throw exists(`View ${[...levels, b.name].join('.')}`);
	const v = makeView(cat, levels, b.name, b);
	cat.views.set(k, v);
	return send(res, 200, { 'metadata-location': v.location, metadata: v.metadata, config: {} });
}

function viewOp(cat, req, res, levels, name, m, b) {
	cat.needNs(levels);
	const k = tKey(levels, name);
	const v = cat.views.get(k);
	if (!v) throw noView(levels, name);
	if (m === 'GET') return send(res, 200, { 'metadata-location': v.location, metadata: v.metadata, config: {} });
	if (m === 'HEAD') return send(res, 204);
	if (m === 'DELETE') {
		cat.views.delete(k);
		return send(res, 204);
	}
	if (m === 'POST') {
		// Replace: only property updates and new versions are understood.
		const md = clone(v.metadata);
		for (const u of b.updates || []) {
			if (u.action === 'set-properties') md.properties = { ...md.properties, ...u.updates };
			else if (u.action === 'remove-properties') for (const x of u.removals || []) delete md.properties[x];
			else if (u.action === 'add-view-version') md.versions.push(u['view-version']);
			else if (u.action === 'set-current-view-version') md['current-version-id'] = u['view-version-id'];
			else if (u.action === 'add-schema') md.schemas.push(u.schema);
			else throw bad(`Unknown view update action: ${u.action}`);
		}
		v.location = cat.nextMetadataLocation(md.location);
		v.metadata = md;
		cat.writeObject(v.location, jstringify(md));
		return send(res, 200, { 'metadata-location': v.location, metadata: md, config: {} });
	}
	throw notAllowed(m);
}

// ---------------------------------------------------------------------------
// Storage: fixture files and written metadata over HTTP, with Range.

function serveFile(cat, req, res, segs) {
	let buf = null;
	if (segs[0] === 's3') {
		buf = cat.readObject(segs.slice(1).map(decodeLevel).join('/'));
	} else if (segs.length >= 2) {
		const fixture = decodeLevel(segs[0]);
		const dir = path.join(cat.opts.fixtures, fixture);
		if (!fixture.startsWith('.') && fs.existsSync(dir)) buf = readInside(dir, segs.slice(1).map(decodeLevel).join('/'));
	}
	if (!buf) return sendError(res, 404, 'NotFoundException', `No such file: ${req.url}`);
	const headers = { 'Accept-Ranges': 'bytes', 'Content-Type': 'application/octet-stream' };
	const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range || '');
	let code = 200;
	let body = buf;
	if (range && (range[1] !== '' || range[2] !== '')) {
		let start;
		let end;
		if (range[1] === '') {
			start = Math.max(0, buf.length - Number(range[2]));
			end = buf.length - 1;
		} else {
			start = Number(range[1]);
			end = range[2] === '' ? buf.length - 1 : Math.min(Number(range[2]), buf.length - 1);
		}
		if (start >= buf.length || start > end) {
			res.writeHead(416, { 'Content-Range': `bytes */${buf.length}`, 'Content-Length': 0 });
			return res.end();
		}
		code = 206;
		body = buf.subarray(start, end + 1);
		headers['Content-Range'] = `bytes ${start}-${end}/${buf.length}`;
	}
	headers['Content-Length'] = body.length;
	res.writeHead(code, headers);
	res.end(req.method === 'HEAD' ? undefined : body);
}

// ---------------------------------------------------------------------------
// Server.

// The request log keeps the newest entries only (a long demo stays small).
const MAX_LOGGED = 20000;

function main() {
	// Until the server is up, a stop request just ends the process.
	process.on('SIGTERM', () => process.exit(0));
	process.on('SIGINT', () => process.exit(0));
	const opts = parseArgs(process.argv.slice(2));
	const cat = new Catalog(opts);
	preloadAll(cat);
	const state = { requests: [], faults: new Faults(), conns: 0 };
	const introspect = opts.introspect ? new Introspect(opts.introspect) : null;
	const sigcheck = opts.sigv4 ? new SigCheck(opts.sigv4) : null;

	// With a certificate the catalog speaks HTTPS (floe's TLS upstream path).
	const tls = opts.tlsCert ? { cert: fs.readFileSync(opts.tlsCert), key: fs.readFileSync(opts.tlsKey) } : null;
	const create = tls ? (h) => https.createServer(tls, h) : (h) => http.createServer(h);
	const server = create(async (req, res) => {
		const u = new URL(req.url, 'http://catalog.invalid');
		const segs = u.pathname.split('/').slice(1);
		const isTest = segs[0] === '_test';
		try {
			if (isTest) return await testHook(cat, req, res, segs.slice(1), state);
			// Bodies are read whole before anything else, so the log has them.
			if (!req.socket.floeConn) req.socket.floeConn = ++state.conns;
			const record = {
				method: req.method,
				url: req.url,
				headers: { ...req.headers },
				time: new Date().toISOString(),
				conn: req.socket.floeConn,
				remote_port: req.socket.remotePort,
			};
			// Over TLS: whether the connection resumed a session.
			if (tls) record.tls_resumed = req.socket.isSessionReused();
			state.requests.push(record);
			if (state.requests.length > MAX_LOGGED) state.requests.splice(0, state.requests.length - MAX_LOGGED);
			req.rawBody = await readBody(req);
			if (req.rawBody.length) {
				record.body = req.rawBody.toString('utf8').slice(0, 65536);
				record.body_sha256 = crypto.createHash('sha256').update(req.rawBody).digest('hex');
			}
			const rule = state.faults.take(u.pathname);
			if (rule && (await applyFault(rule, req, res))) return;
			if (segs[0] === 'files') return serveFile(cat, req, res, segs.slice(1));
			if (opts.token && req.headers.authorization !== `Bearer ${opts.token}`)
				throw new HttpError(401, 'NotAuthorizedException', 'Not authorized: missing or invalid bearer token');
			if (introspect) await introspect.check(req);
			if (sigcheck) await sigcheck.check(req, record);
			if (segs[0] !== 'v1') throw new HttpError(404, 'NotFoundException', `No route for ${req.method} ${req.url}`);
			await api(cat, req, res, segs.slice(1), u.searchParams);
		} catch (e) {
			if (res.headersSent || res.destroyed) return;
			if (e instanceof HttpError) return sendError(res, e.code, e.type, e.message);
			process.stderr.write(`catalog[${opts.name}]: ${req.method} ${req.url}: ${e.stack}\n`);
			sendError(res, 500, 'InternalServerError', String(e.message || e));
		}
	});
	server.keepAliveTimeout = 30000;
	server.headersTimeout = 35000;
	server.requestTimeout = 0;
	server.on('clientError', (err, socket) => {
		if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
	});
	// A test catalog owes no drain: stop listening, drop every connection
	// and exit 0 right away (also when a delayed request is still pending).
	process.removeAllListeners('SIGTERM');
	process.removeAllListeners('SIGINT');
	const stop = () => {
		server.close();
		server.closeAllConnections();
		setTimeout(() => process.exit(0), 20);
	};
	process.on('SIGTERM', stop);
	process.on('SIGINT', stop);
	// SIGHUP re-reads the certificate files and drops idle connections, so
	// a test can swap in a certificate the client does not trust.
	if (tls)
		process.on('SIGHUP', () => {
			server.setSecureContext({ cert: fs.readFileSync(opts.tlsCert), key: fs.readFileSync(opts.tlsKey) });
			server.closeIdleConnections();
		});
	// SIGUSR2 drops idle connections as a keep-alive timeout may: on TLS,
	// without a close_notify.
	process.on('SIGUSR2', () => server.closeIdleConnections());
	server.on('error', (e) => {
		process.stderr.write(`catalog[${opts.name}]: ${e.message}\n`);
		process.exit(1);
	});
	server.listen(opts.port, '127.0.0.1', () => {
		process.stdout.write(`ready ${server.address().port}\n`);
	});
}

if (require.main === module) main();

module.exports = { jparse, jstringify, BigNum };
