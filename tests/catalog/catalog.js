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

// ---------------------------------------------------------------------------
// Lossless JSON: Iceberg snapshot ids are 64-bit and do not survive
// JSON.parse. Integers outside the safe range are kept as their source text.

class BigNum {
	constructor(raw) {
		this.raw = raw;
	}
	toString() {
		return this.raw;
	}
}

// Parse TEXT, keeping unsafe integers as BigNum. Throws SyntaxError.
function jparse(text) {
	let i = 0;
	const n = text.length;
	const fail = (what) => {
		throw new SyntaxError(`JSON: ${what} at offset ${i}`);
	};
	const ws = () => {
		while (i < n && ' \t\r\n'.includes(text[i])) i++;
	};
	const value = () => {
		ws();
		if (i >= n) fail('unexpected end');
		const c = text[i];
		if (c === '{') {
			i++;
			const o = {};
			ws();
			if (text[i] === '}') {
				i++;
				return o;
			}
			for (;;) {
				ws();
				if (text[i] !== '"') fail('expected key');
				const k = str();
				ws();
				if (text[i] !== ':') fail('expected :');
				i++;
				o[k] = value();
				ws();
				if (text[i] === ',') {
					i++;
					continue;
				}
				if (text[i] === '}') {
					i++;
					return o;
				}
				fail('expected , or }');
			}
		}
		if (c === '[') {
			i++;
			const a = [];
			ws();
			if (text[i] === ']') {
				i++;
				return a;
			}
			for (;;) {
				a.push(value());
				ws();
				if (text[i] === ',') {
					i++;
					continue;
				}
				if (text[i] === ']') {
					i++;
					return a;
				}
				fail('expected , or ]');
			}
		}
		if (c === '"') return str();
		if (text.startsWith('true', i)) {
			i += 4;
			return true;
		}
		if (text.startsWith('false', i)) {
			i += 5;
			return false;
		}
		if (text.startsWith('null', i)) {
			i += 4;
			return null;
		}
		const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 64));
		if (!m) fail('unexpected character');
		i += m[0].length;
		if (!m[2] && !m[3]) {
			const v = Number(m[0]);
			if (!Number.isSafeInteger(v)) return new BigNum(m[0]);
			return v;
		}
		return Number(m[0]);
	};
	const str = () => {
		const start = i;
		i++;
		for (;;) {
			if (i >= n) fail('unterminated string');
			const c = text[i];
			if (c === '"') break;
			if (c === '\\') i++;
			i++;
		}
		i++;
		return JSON.parse(text.slice(start, i));
	};
	const v = value();
	ws();
	if (i !== n) fail('trailing data');
	return v;
}

// Serialise V like JSON.stringify (indent-free), writing BigNum raw.
function jstringify(v) {
	if (v instanceof BigNum) return v.raw;
	if (v === null || v === undefined) return 'null';
	if (Array.isArray(v)) return '[' + v.map((x) => (x === undefined ? 'null' : jstringify(x))).join(',') + ']';
	if (typeof v === 'object') {
		const parts = [];
		for (const [k, x] of Object.entries(v)) {
			if (x === undefined) continue;
			parts.push(JSON.stringify(k) + ':' + jstringify(x));
		}
		return '{' + parts.join(',') + '}';
	}
	return JSON.stringify(v);
}

// The canonical text of a snapshot id (number, BigNum or string), or null.
function idText(v) {
	if (v === null || v === undefined) return null;
	return String(v);
}

// Deep copy through the lossless serialiser.
function clone(v) {
	return jparse(jstringify(v));
}

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
// Errors.

const ERR_TYPES = {
	400: 'BadRequestException',
	401: 'NotAuthorizedException',
	403: 'ForbiddenException',
	404: 'NoSuchTableException',
	406: 'UnsupportedOperationException',
	409: 'CommitFailedException',
	422: 'UnprocessableEntityException',
	500: 'InternalServerError',
	502: 'CommitStateUnknownException',
	503: 'SlowDownException',
	504: 'CommitStateUnknownException',
};

class HttpError extends Error {
	constructor(code, type, message) {
		super(message);
		this.code = code;
		this.type = type || ERR_TYPES[code] || 'InternalServerError';
	}
}

const bad = (msg) => new HttpError(400, 'BadRequestException', msg);
const noNs = (ns) => new HttpError(404, 'NoSuchNamespaceException', `Namespace does not exist: ${ns.join('.')}`);
const noTable = (ns, t) => new HttpError(404, 'NoSuchTableException', `Table does not exist: ${[...ns, t].join('.')}`);
const noView = (ns, v) => new HttpError(404, 'NoSuchViewException', `View does not exist: ${[...ns, v].join('.')}`);
const exists = (what) => new HttpError(409, 'AlreadyExistsException', `${what} already exists`);
const commitFailed = (msg) => new HttpError(409, 'CommitFailedException', `Requirement failed: ${msg}`);

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
// Table metadata construction and commits.

// Highest field id in an Iceberg type (struct, list, map), 0 if none.
function maxFieldId(type) {
	if (!type || typeof type !== 'object') return 0;
	let m = 0;
	if (Array.isArray(type.fields)) {
		for (const f of type.fields) m = Math.max(m, Number(f.id) || 0, maxFieldId(f.type));
	}
	if (type.type === 'list') m = Math.max(m, Number(type['element-id']) || 0, maxFieldId(type.element));
	if (type.type === 'map') {
		m = Math.max(m, Number(type['key-id']) || 0, Number(type['value-id']) || 0);
		m = Math.max(m, maxFieldId(type.key), maxFieldId(type.value));
	}
	return m;
}

// Fresh format-version 2 metadata for a create-table request BODY.
function newMetadata(cat, levels, body) {
	if (typeof body.name !== 'string' || body.name === '') throw bad('Missing table name');
	if (!body.schema || body.schema.type !== 'struct' || !Array.isArray(body.schema.fields))
		throw bad('Missing or invalid schema');
	const location =
		body.location || `s3a://floe-${cat.name}/warehouse/${levels.map(encodeURIComponent).join('/')}/${encodeURIComponent(body.name)}`;
	const schema = { ...body.schema, 'schema-id': 0 };
	const spec = body['partition-spec'] || { 'spec-id': 0, fields: [] };
	const order = body['write-order'] || { 'order-id': 0, fields: [] };
	let lastPart = 999;
	for (const f of spec.fields || []) lastPart = Math.max(lastPart, Number(f['field-id']) || 0);
	return {
		'format-version': 2,
		'table-uuid': crypto.randomUUID(),
		location,
		'last-sequence-number': 0,
		'last-updated-ms': Date.now(),
		'last-column-id': maxFieldId(schema),
		'current-schema-id': 0,
		schemas: [schema],
		'default-spec-id': spec['spec-id'] ?? 0,
		'partition-specs': [{ 'spec-id': spec['spec-id'] ?? 0, fields: spec.fields || [] }],
		'last-partition-id': lastPart,
		'default-sort-order-id': order['order-id'] ?? 0,
		'sort-orders': [{ 'order-id': order['order-id'] ?? 0, fields: order.fields || [] }],
		properties: { ...(body.properties || {}) },
		'current-snapshot-id': -1,
		snapshots: [],
		'snapshot-log': [],
		'metadata-log': [],
		refs: {},
		statistics: [],
	};
}

// Check one commit requirement REQ against metadata MD (null: no table).
function checkRequirement(md, req) {
	switch (req.type) {
		case 'assert-create':
			if (md) throw commitFailed('table already exists');
			return;
		case 'assert-table-uuid':
			if (!md || md['table-uuid'] !== req.uuid)
				throw commitFailed(`table UUID does not match: expected ${md && md['table-uuid']} != ${req.uuid}`);
			return;
		case 'assert-ref-snapshot-id': {
			const ref = md && md.refs && md.refs[req.ref];
			const want = idText(req['snapshot-id']);
			if (want === null) {
				if (ref) throw commitFailed(`branch or tag ${req.ref} was created concurrently`);
				return;
			}
			if (!ref) throw commitFailed(`branch or tag ${req.ref} is missing, expected ${want}`);
			if (idText(ref['snapshot-id']) !== want)
				throw commitFailed(`branch ${req.ref} has changed: expected id ${want} != ${idText(ref['snapshot-id'])}`);
			return;
		}
		case 'assert-current-schema-id':
			if (md['current-schema-id'] !== req['current-schema-id'])
				throw commitFailed(`current schema changed: expected id ${req['current-schema-id']} != ${md['current-schema-id']}`);
			return;
		case 'assert-last-assigned-field-id':
			if (md['last-column-id'] !== req['last-assigned-field-id'])
				throw commitFailed(`last assigned field id changed: expected ${req['last-assigned-field-id']} != ${md['last-column-id']}`);
			return;
		case 'assert-last-assigned-partition-id':
			if (md['last-partition-id'] !== req['last-assigned-partition-id'])
				throw commitFailed('last assigned partition id changed');
			return;
		case 'assert-default-spec-id':
			if (md['default-spec-id'] !== req['default-spec-id']) throw commitFailed('default partition spec changed');
			return;
		case 'assert-default-sort-order-id':
			if (md['default-sort-order-id'] !== req['default-sort-order-id']) throw commitFailed('default sort order changed');
			return;
		default:
			throw bad(`Unknown requirement type: ${req && req.type}`);
	}
}

// Apply one metadata update U to MD in place.
function applyUpdate(md, u) {
	switch (u.action) {
		case 'assign-uuid':
			md['table-uuid'] = u.uuid;
			return;
		case 'upgrade-format-version':
			if (u['format-version'] < md['format-version']) throw bad('Cannot downgrade format version');
			md['format-version'] = u['format-version'];
			return;
		case 'add-schema': {
			const ids = md.schemas.map((s) => s['schema-id']);
			const schema = { ...u.schema, 'schema-id': Math.max(-1, ...ids) + 1 };
			md.schemas.push(schema);
			md['last-column-id'] = Math.max(md['last-column-id'] || 0, u['last-column-id'] || 0, maxFieldId(schema));
			md._lastAddedSchema = schema['schema-id'];
			return;
		}
		case 'set-current-schema': {
			let id = u['schema-id'];
			if (id === -1) id = md._lastAddedSchema;
			if (id === undefined || !md.schemas.some((s) => s['schema-id'] === id)) throw bad(`Unknown schema id ${u['schema-id']}`);
			md['current-schema-id'] = id;
			return;
		}
		case 'add-spec': {
			const ids = md['partition-specs'].map((s) => s['spec-id']);
			const spec = { ...u.spec, 'spec-id': Math.max(-1, ...ids) + 1 };
			md['partition-specs'].push(spec);
			for (const f of spec.fields || []) md['last-partition-id'] = Math.max(md['last-partition-id'], f['field-id'] || 0);
			md._lastAddedSpec = spec['spec-id'];
			return;
		}
		case 'set-default-spec': {
			let id = u['spec-id'];
			if (id === -1) id = md._lastAddedSpec;
			if (!md['partition-specs'].some((s) => s['spec-id'] === id)) throw bad(`Unknown spec id ${u['spec-id']}`);
			md['default-spec-id'] = id;
			return;
		}
		case 'add-sort-order': {
			// The unsorted order is always id 0; others get the next id.
			const fields = (u['sort-order'] && u['sort-order'].fields) || [];
			const ids = md['sort-orders'].map((s) => s['order-id']);
			const order = { ...u['sort-order'], fields, 'order-id': fields.length ? Math.max(0, ...ids) + 1 : 0 };
			if (!md['sort-orders'].some((s) => s['order-id'] === order['order-id'])) md['sort-orders'].push(order);
			md._lastAddedOrder = order['order-id'];
			return;
		}
		case 'set-default-sort-order': {
			let id = u['sort-order-id'];
			if (id === -1) id = md._lastAddedOrder;
			if (!md['sort-orders'].some((s) => s['order-id'] === id)) throw bad(`Unknown sort order id ${u['sort-order-id']}`);
			md['default-sort-order-id'] = id;
			return;
		}
		case 'add-snapshot': {
			const s = u.snapshot;
			if (!s || s['snapshot-id'] === undefined) throw bad('add-snapshot needs a snapshot');
			md.snapshots = md.snapshots || [];
			if (md.snapshots.some((x) => idText(x['snapshot-id']) === idText(s['snapshot-id'])))
				throw bad(`Snapshot already exists: ${idText(s['snapshot-id'])}`);
			md.snapshots.push(s);
			if (typeof s['sequence-number'] === 'number')
				md['last-sequence-number'] = Math.max(md['last-sequence-number'] || 0, s['sequence-number']);
			return;
		}
		case 'set-snapshot-ref': {
			const id = idText(u['snapshot-id']);
			const snap = (md.snapshots || []).find((x) => idText(x['snapshot-id']) === id);
			if (!snap) throw bad(`Cannot set ${u['ref-name']} to unknown snapshot: ${id}`);
			md.refs = md.refs || {};
			const ref = { 'snapshot-id': snap['snapshot-id'], type: u.type || 'branch' };
			for (const k of ['max-ref-age-ms', 'max-snapshot-age-ms', 'min-snapshots-to-keep'])
				if (u[k] !== undefined) ref[k] = u[k];
			md.refs[u['ref-name']] = ref;
			if (u['ref-name'] === 'main') {
				md['current-snapshot-id'] = snap['snapshot-id'];
				md['snapshot-log'] = [
					...(md['snapshot-log'] || []),
					{ 'timestamp-ms': snap['timestamp-ms'] || Date.now(), 'snapshot-id': snap['snapshot-id'] },
				];
			}
			return;
		}
		case 'remove-snapshots': {
			const drop = new Set((u['snapshot-ids'] || []).map(idText));
			md.snapshots = (md.snapshots || []).filter((x) => !drop.has(idText(x['snapshot-id'])));
			return;
		}
		case 'remove-snapshot-ref':
			if (md.refs) delete md.refs[u['ref-name']];
			if (u['ref-name'] === 'main') md['current-snapshot-id'] = -1;
			return;
		case 'set-location':
			md.location = u.location;
			return;
		case 'set-properties':
			md.properties = { ...(md.properties || {}), ...(u.updates || {}) };
			return;
		case 'remove-properties':
			md.properties = { ...(md.properties || {}) };
			for (const k of u.removals || []) delete md.properties[k];
			return;
		case 'set-statistics':
			md.statistics = [
				...(md.statistics || []).filter((s) => idText(s['snapshot-id']) !== idText(u.statistics['snapshot-id'])),
				u.statistics,
			];
			return;
		case 'remove-statistics':
			md.statistics = (md.statistics || []).filter((s) => idText(s['snapshot-id']) !== idText(u['snapshot-id']));
			return;
		default:
			throw bad(`Unknown update action: ${u && u.action}`);
	}
}

// Validate and apply one CommitTableRequest BODY to table T (or a staged
// create when T has no location). Returns the new metadata; throws on a
// failed requirement without changing anything.
function planCommit(existing, body) {
	if (!body || typeof body !== 'object') throw bad('Invalid commit request');
	const reqs = body.requirements || [];
	const ups = body.updates || [];
	if (!Array.isArray(reqs) || !Array.isArray(ups)) throw bad('requirements and updates must be arrays');
	for (const r of reqs) checkRequirement(existing, r);
	const md = clone(existing);
	for (const u of ups) applyUpdate(md, u);
	delete md._lastAddedSchema;
	delete md._lastAddedSpec;
	delete md._lastAddedOrder;
	return md;
}

// Metadata as served for the snapshots=MODE query (all or refs).
function metadataFor(md, mode) {
	if (mode !== 'refs') return md;
	const keep = new Set(Object.values(md.refs || {}).map((r) => idText(r['snapshot-id'])));
	return { ...md, snapshots: (md.snapshots || []).filter((s) => keep.has(idText(s['snapshot-id']))) };
}

// The ETag of table T's representation under snapshots=MODE.
function etagFor(t, mode) {
	const h = crypto.createHash('sha256').update(`${t.location}|${mode || 'all'}`).digest('hex');
	return `"${h.slice(0, 32)}"`;
}

// True when an If-None-Match header value matches ETAG.
function etagMatches(header, etag) {
	if (!header) return false;
	return header.split(',').some((x) => {
		const v = x.trim().replace(/^W\//, '');
		return v === '*' || v === etag;
	});
}

// A minimal view over db.bunnies.
function makeView(cat, levels, name, body) {
	const location = (body && body.location) || `s3a://floe-${cat.name}/warehouse/${levels.join('/')}/${name}`;
	const schema = (body && body.schema) || {
		type: 'struct',
		'schema-id': 0,
		fields: [{ id: 1, name: 'Breed Name', type: 'string', required: false }],
	};
	const version = (body && body['view-version']) || {
		'version-id': 1,
		'timestamp-ms': Date.now(),
		'schema-id': 0,
		summary: { 'engine-name': 'floe-test' },
		representations: [{ type: 'sql', sql: 'SELECT "Breed Name" FROM db.bunnies', dialect: 'spark' }],
		'default-namespace': levels,
	};
	const metadata = {
		'view-uuid': crypto.randomUUID(),
		'format-version': 1,
		location,
		'current-version-id': version['version-id'],
		versions: [version],
		'version-log': [{ 'version-id': version['version-id'], 'timestamp-ms': version['timestamp-ms'] }],
		schemas: [schema],
		properties: { ...((body && body.properties) || {}) },
	};
	const loc = cat.nextMetadataLocation(location);
	cat.writeObject(loc, jstringify(metadata));
	return { ns: levels, name, location: loc, metadata };
}

// ---------------------------------------------------------------------------
// HTTP plumbing.

// Decode one name level as Java (+ for space) and iceberg-js (%20) send it.
function decodeLevel(s) {
	try {
		return decodeURIComponent(s.replace(/\+/g, ' '));
	} catch {
		throw bad(`Malformed path segment: ${s}`);
	}
}

// A namespace path segment or ?parent= value -> levels.
function decodeNamespace(seg) {
	if (seg === undefined || seg === '') throw bad('Empty namespace');
	return seg.split(/%1F|\x1f/i).map(decodeLevel);
}

function send(res, code, body, headers = {}) {
	const text = body === undefined ? '' : jstringify(body);
	const h = { ...headers };
	if (body !== undefined) {
		h['Content-Type'] = 'application/json';
		h['Content-Length'] = Buffer.byteLength(text);
	} else if (code !== 204 && code !== 304) {
		h['Content-Length'] = 0;
	}
	res.writeHead(code, h);
	res.end(res.req.method === 'HEAD' ? undefined : text);
}

function sendError(res, code, type, message) {
	send(res, code, { error: { message, type, code } });
}

// A page of ITEMS for ?pageToken=&pageSize= (tokens are offsets here).
function paginate(items, q) {
	if (!q.has('pageToken')) return { page: items, next: undefined };
	const tok = q.get('pageToken');
	let off = 0;
	if (tok !== '') {
		off = Number.parseInt(Buffer.from(tok, 'base64url').toString(), 10);
		if (!Number.isInteger(off) || off < 0) throw bad(`Invalid page token: ${tok}`);
	}
	let size = items.length;
	if (q.has('pageSize')) {
		size = Number(q.get('pageSize'));
		if (!Number.isInteger(size) || size < 1) throw bad(`Invalid pageSize: ${q.get('pageSize')}`);
	}
	const page = items.slice(off, off + size);
	const next = off + size < items.length ? Buffer.from(String(off + size)).toString('base64url') : undefined;
	return { page, next };
}

function readBody(req) {
	return new Promise((resolve, reject) => {
		const chunks = [];
		let len = 0;
		req.on('data', (c) => {
			len += c.length;
			if (len > 16 << 20) {
				reject(bad('Request body too large'));
				req.destroy();
				return;
			}
			chunks.push(c);
		});
		req.on('end', () => resolve(Buffer.concat(chunks)));
		req.on('error', reject);
	});
}

function parseJson(buf) {
	if (!buf || buf.length === 0) throw bad('Missing request body');
	try {
		const v = jparse(buf.toString('utf8'));
		if (!v || typeof v !== 'object' || Array.isArray(v)) throw new SyntaxError('not an object');
		return v;
	} catch (e) {
		throw bad(`Malformed JSON body: ${e.message}`);
	}
}

const ENDPOINTS = [
	'GET /v1/{prefix}/namespaces',
	'POST /v1/{prefix}/namespaces',
	'GET /v1/{prefix}/namespaces/{namespace}',
	'HEAD /v1/{prefix}/namespaces/{namespace}',
	'DELETE /v1/{prefix}/namespaces/{namespace}',
	'POST /v1/{prefix}/namespaces/{namespace}/properties',
	'GET /v1/{prefix}/namespaces/{namespace}/tables',
	'POST /v1/{prefix}/namespaces/{namespace}/tables',
	'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}',
	'HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}',
	'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}',
	'DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}',
	'POST /v1/{prefix}/namespaces/{namespace}/register',
	'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials',
	'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan',
	'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}',
	'DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}',
	'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks',
	'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics',
	'POST /v1/{prefix}/tables/rename',
	'POST /v1/{prefix}/transactions/commit',
	'GET /v1/{prefix}/namespaces/{namespace}/views',
	'POST /v1/{prefix}/namespaces/{namespace}/views',
	'GET /v1/{prefix}/namespaces/{namespace}/views/{view}',
	'HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}',
	'DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}',
];

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
			state.requests.push(record);
			if (state.requests.length > MAX_LOGGED) state.requests.splice(0, state.requests.length - MAX_LOGGED);
			req.rawBody = await readBody(req);
			if (req.rawBody.length) record.body = req.rawBody.toString('utf8').slice(0, 65536);
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
