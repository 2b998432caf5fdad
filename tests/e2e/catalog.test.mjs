// The two test catalogs driven directly by real Iceberg clients: iceberg-js
// for catalog operations, icebird for the rows. This proves the harness that
// floe.test.mjs puts behind floe: the catalogs speak the REST spec as the
// clients expect, and the same table holds different rows on each side.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { IcebergError, IcebergRestCatalog } from 'iceberg-js';
import { hook, killAll, readRows, recordingFetch, rowsText, startCatalog, stop, tableRequest } from './lib.mjs';
// A hung request fails its test instead of the whole run.
const T = { timeout: 30000 };

describe('test catalogs with iceberg-js and icebird', () => {
	let wh;
	let lh;
	let whc; // the warehouse through its announced prefix
	let lhc; // the lakehouse without a prefix
	const whFetch = recordingFetch();

	before(async () => {
		[wh, lh] = await Promise.all([startCatalog('warehouse', ['--prefix', 'wh']), startCatalog('lakehouse')]);
		whc = new IcebergRestCatalog({ baseUrl: wh.base, warehouse: 'analytics', fetch: whFetch });
		lhc = new IcebergRestCatalog({ baseUrl: lh.base });
	});
	after(async () => {
		await stop(wh && wh.child);
		await stop(lh && lh.child);
		await killAll();
	});

	test('config gives the prefix and echoes the warehouse', T, async () => {
		const cfg = await whc.loadConfig();
		assert.equal(cfg.overrides.prefix, 'wh');
		assert.equal(cfg.defaults.warehouse, 'analytics');
		assert.equal(cfg.defaults['floe-test.catalog'], 'warehouse');
	});

	test('list namespaces: each side has its own', T, async () => {
		const w = (await whc.listNamespaces()).namespaces.map((n) => n.namespace.join('.'));
		const l = (await lhc.listNamespaces()).namespaces.map((n) => n.namespace.join('.'));
		assert.deepEqual(w, ['db', 'wh_only']);
		assert.deepEqual(l, ['db', 'lh_only']);
		assert.ok(whFetch.log.some((r) => r.url.includes('/v1/wh/namespaces')), 'the prefix was used');
	});

	test('list namespaces page by page', T, async () => {
		const p1 = await whc.listNamespaces({ pageSize: 1, pageToken: '' });
		assert.equal(p1.namespaces.length, 1);
		assert.ok(p1.nextPageToken);
		const p2 = await whc.listNamespaces({ pageSize: 1, pageToken: p1.nextPageToken });
		assert.equal(p2.namespaces.length, 1);
		assert.equal(p2.nextPageToken, undefined);
		assert.notDeepEqual(p1.namespaces, p2.namespaces);
	});

	test('list tables', T, async () => {
		const w = (await whc.listTables({ namespace: ['db'] })).identifiers.map((i) => i.name);
		const l = (await lhc.listTables({ namespace: ['db'] })).identifiers.map((i) => i.name);
		assert.deepEqual(w, ['athena', 'bunnies', 'java_bunnies', 'wh_bunnies']);
		assert.deepEqual(l, ['athena', 'bunnies', 'java_bunnies', 'lh_bunnies']);
	});

	test('load a table, then a conditional load answers 304 (null)', T, async () => {
		const r = await whc.loadTableResult({ namespace: ['db'], name: 'bunnies' });
		assert.match(r['metadata-location'], /^s3a:\/\/hyperparam-iceberg\/spark\/bunnies\/metadata\/v2\.metadata\.json$/);
		assert.equal(r.metadata['format-version'], 2);
		assert.ok(r.etag, 'an ETag');
		const again = await whc.loadTable({ namespace: ['db'], name: 'bunnies' }, { ifNoneMatch: r.etag });
		assert.equal(again, null);
		const refs = await whc.loadTableResult({ namespace: ['db'], name: 'bunnies' }, { snapshots: 'refs' });
		assert.notEqual(refs.etag, r.etag, 'snapshots=refs is another representation');
		assert.ok(refs.metadata.snapshots.length < r.metadata.snapshots.length || r.metadata.snapshots.length === 1);
	});

	test('a missing table is IcebergError 404 NoSuchTableException', T, async () => {
		await assert.rejects(whc.loadTable({ namespace: ['db'], name: 'nope' }), (e) => {
			assert.ok(e instanceof IcebergError);
			assert.equal(e.status, 404);
			assert.equal(e.icebergType, 'NoSuchTableException');
			return true;
		});
		assert.equal(await whc.tableExists({ namespace: ['db'], name: 'nope' }), false);
		assert.equal(await whc.tableExists({ namespace: ['db'], name: 'bunnies' }), true);
	});

	test('the same table holds different rows on the two sides', T, async () => {
		const w = await whc.loadTable({ namespace: ['db'], name: 'bunnies' });
		const l = await lhc.loadTable({ namespace: ['db'], name: 'bunnies' });
		const wr = await readRows(w, wh.base);
		const lr = await readRows(l, lh.base);
		assert.equal(wr.length, 21);
		assert.equal(lr.length, 20);
		assert.equal(wr[0]['Breed Name'], 'Holland Lop');
		assert.ok(!('breed_name_length' in wr[0]) || wr[0].breed_name_length === undefined);
		assert.equal(typeof lr[0].breed_name_length, 'number');
		assert.notEqual(rowsText(wr), rowsText(lr));

		const wj = await readRows(await whc.loadTable({ namespace: ['db'], name: 'java_bunnies' }), wh.base);
		const lj = await readRows(await lhc.loadTable({ namespace: ['db'], name: 'java_bunnies' }), lh.base);
		assert.equal(wj.length, 21);
		assert.equal(lj.length, 15);

		const wa = await readRows(await whc.loadTable({ namespace: ['db'], name: 'athena' }), wh.base);
		assert.deepEqual(wa, [
			{ id: 1, name: 'Alice' },
			{ id: 2, name: 'Bob' },
		]);
	});

	test('create, update, drop a namespace and a table', T, async () => {
		const ns = { namespace: ['e2e_direct'] };
		await whc.createNamespace(ns, { properties: { owner: 'e2e' } });
		assert.deepEqual((await whc.loadNamespaceMetadata(ns)).properties, { owner: 'e2e' });
		await assert.rejects(whc.createNamespace(ns), (e) => e.status === 409 && e.icebergType === 'AlreadyExistsException');

		const md = await whc.createTable(ns, tableRequest('t1'));
		assert.equal(md['current-snapshot-id'], -1);
		assert.equal(md.properties['created-by'], 'floe-e2e');
		assert.match(md.location, /^s3a:\/\//);
		const up = await whc.updateTable(
			{ namespace: ['e2e_direct'], name: 't1' },
			{
				requirements: [{ type: 'assert-table-uuid', uuid: md['table-uuid'] }],
				updates: [{ action: 'set-properties', updates: { stage: 'updated' } }],
			}
		);
		assert.equal(up.metadata.properties.stage, 'updated');
		assert.match(up['metadata-location'], /\.metadata\.json$/);
		const loaded = await whc.loadTable({ namespace: ['e2e_direct'], name: 't1' });
		assert.equal(loaded.properties.stage, 'updated');
		await assert.rejects(
			whc.updateTable(
				{ namespace: ['e2e_direct'], name: 't1' },
				{ requirements: [{ type: 'assert-table-uuid', uuid: '00000000-0000-0000-0000-000000000000' }], updates: [] }
			),
			(e) => e.status === 409 && e.icebergType === 'CommitFailedException'
		);
		await whc.dropTable({ namespace: ['e2e_direct'], name: 't1' });
		assert.equal(await whc.tableExists({ namespace: ['e2e_direct'], name: 't1' }), false);
		await whc.dropNamespace(ns);
		assert.equal(await whc.namespaceExists(ns), false);
		// Nothing of this reached the lakehouse.
		const lreq = await hook(lh, 'requests');
		assert.ok(!lreq.requests.some((r) => r.url.includes('e2e_direct')));
	});

	test('the request log saw iceberg-js idempotency keys', T, async () => {
		const { requests } = await hook(wh, 'requests');
		const posts = requests.filter((r) => r.method === 'POST');
		assert.ok(posts.length >= 3);
		for (const r of posts) assert.match(r.headers['idempotency-key'], /^[0-9a-f-]{36}$/);
	});

	test('an injected 503 reaches the client as an IcebergError', T, async () => {
		await hook(wh, 'fault', 'POST', { match: '/tables/athena', status: 503, count: 1 });
		await assert.rejects(whc.loadTable({ namespace: ['db'], name: 'athena' }), (e) => e.status === 503);
		const ok = await whc.loadTable({ namespace: ['db'], name: 'athena' });
		assert.equal(ok['format-version'], 2);
	});
});
