// floe test catalog: Iceberg table and view metadata, made, checked and
// committed.
'use strict';

const crypto = require('node:crypto');
const { bad, commitFailed, exists } = require('./errors.js');
const { clone, idText, jstringify } = require('./json.js');

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

module.exports = { maxFieldId, newMetadata, checkRequirement, applyUpdate, planCommit, metadataFor, etagFor, etagMatches, makeView };
