// floe end to end: two test catalogs behind a real floe, driven by real
// Iceberg clients. iceberg-js lists, loads, creates, commits and drops through
// floe; icebird reads the rows of whatever table floe returned, so a wave
// flip, a rollback and an ack are seen the way a query engine sees them:
// the warehouse copy's rows, then the lakehouse copy's, then the warehouse's.
//
// FLOE and FLOECTL name the binaries (default build/floe, build/floectl at
// the top of the checkout). A missing binary fails the suite; it never skips.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { IcebergRestCatalog } from 'iceberg-js';
import {
	TOP,
	freePort,
	hook,
	isExecutable,
	killAll,
	readRows,
	recordingFetch,
	rowsText,
	run,
	startCatalog,
	stop,
	tableRequest,
	waitReady,
} from './lib.mjs';

const FLOE = path.resolve(TOP, process.env.FLOE || 'build/floe');
const FLOECTL = path.resolve(TOP, process.env.FLOECTL || 'build/floectl');
const BUNNIES = { namespace: ['db'], name: 'bunnies' };
const ATHENA = { namespace: ['db'], name: 'athena' };
// A hung request fails its test instead of the whole run.
const T = { timeout: 30000 };

describe('floe with iceberg-js and icebird', () => {
	let dir;
	let conf;
	let wh;
	let lh;
	let floe;
	let floeErr = '';
	let base;
	let client; // iceberg-js through floe's routed prefix
	const seen = recordingFetch();
	const sides = {};

	// floectl -c CONF ARGS; asserts exit status WANT (0 unless given).
	async function floectl(args, want = 0) {
		const r = await run(FLOECTL, ['-c', conf, ...args]);
		assert.equal(
			r.code,
			want,
			`floectl ${args.join(' ')}: exit ${r.code}, want ${want}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`
		);
		return r;
	}

	// Load db.bunnies through floe: {result, side, wave, rows}.
	async function loadBunnies(c = client, opts) {
		const result = await c.loadTableResult(BUNNIES, opts);
		const h = seen.last.headers;
		const side = h.get('x-floe-target');
		if (result === null) return { result, side, wave: h.get('x-floe-wave') };
		assert.ok(side === 'warehouse' || side === 'lakehouse', `X-Floe-Target: ${side}`);
		const rows = await readRows(result.metadata, sides[side].base);
		return { result, side, wave: h.get('x-floe-wave'), rows };
	}

	before(async () => {
		for (const [what, file] of [
			['floe', FLOE],
			['floectl', FLOECTL],
		]) {
			if (!isExecutable(file))
				throw new Error(
					`${what} binary not found or not executable: ${file} ` +
						`(build it with "make", or set ${what.toUpperCase()}=path)`
				);
		}
		dir = fs.mkdtempSync(path.join(os.tmpdir(), 'floe-e2e-'));
		fs.mkdirSync(path.join(dir, 'state'));
		fs.mkdirSync(path.join(dir, 'log'));
		// The warehouse announces a prefix (floe must rewrite to it); the
		// lakehouse has none.
		[wh, lh] = await Promise.all([startCatalog('warehouse', ['--prefix', 'wh']), startCatalog('lakehouse')]);
		sides.warehouse = wh;
		sides.lakehouse = lh;
		const port = await freePort();
		base = `http://127.0.0.1:${port}`;
		conf = path.join(dir, 'floe.conf');
		fs.writeFileSync(
			conf,
			[
				'; written by tests/e2e/floe.test.mjs',
				'[floe]',
				`listen = 127.0.0.1:${port}`,
				`admin_socket = ${path.join(dir, 'floe.sock')}`,
				`state_dir = ${path.join(dir, 'state')}`,
				`rollback_log = ${path.join(dir, 'log', 'rollback.log')}`,
				`access_log = ${path.join(dir, 'log', 'access.log')}`,
				'',
				'[warehouse]',
				`uri = ${wh.base}`,
				'warehouse = analytics',
				'',
				'[lakehouse]',
				`uri = ${lh.base}`,
				'warehouse = lakehouse',
				'',
				'[policy]',
				'; no reconcile jobs here: the cutover gate needs no ledger records',
				'gate_min_clean = 0',
				'',
			].join('\n')
		);
		floe = spawn(FLOE, ['-c', conf], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
		floe.stdout.on('data', (d) => {
			floeErr += d;
		});
		floe.stderr.on('data', (d) => {
			floeErr += d;
		});
		try {
			await waitReady(`${base}/readyz`, floe, 15000, `floe (${FLOE})`);
		} catch (e) {
			e.message += `\nfloe output:\n${floeErr.slice(-4000)}`;
			throw e;
		}
		client = new IcebergRestCatalog({ baseUrl: base, warehouse: 'analytics', fetch: seen });
	});

	after(async () => {
		if (floe) await stop(floe);
		if (wh) await stop(wh.child);
		if (lh) await stop(lh.child);
		await killAll();
		if (floeErr) console.log(`floe output (tail):\n${floeErr.slice(-3000)}`);
		if (dir) fs.rmSync(dir, { recursive: true, force: true });
	});

	test('floe answers /v1/config itself with the routed prefix', T, async () => {
		const cfg = await client.loadConfig();
		assert.equal(cfg.overrides.prefix, 'routed');
		const pinned = await (await fetch(`${base}/v1/config?warehouse=lakehouse`)).json();
		assert.equal(pinned.overrides.prefix, 'lakehouse');
	});

	test('namespaces are merged from both sides', T, async () => {
		const { namespaces } = await client.listNamespaces();
		const names = namespaces.map((n) => n.namespace.join('.'));
		for (const want of ['db', 'wh_only', 'lh_only']) assert.ok(names.includes(want), `${want} in ${names}`);
		assert.equal(names.filter((n) => n === 'db').length, 1, 'db once');
	});

	test('tables are the sorted union of both sides, also page by page', T, async () => {
		const all = (await client.listTables({ namespace: ['db'] })).identifiers.map((i) => i.name);
		assert.deepEqual(all, ['athena', 'bunnies', 'java_bunnies', 'lh_bunnies', 'wh_bunnies']);
		const paged = [];
		let token = '';
		for (let i = 0; i < 10; i++) {
			const page = await client.listTables({ namespace: ['db'] }, { pageSize: 2, pageToken: token });
			assert.ok(page.identifiers.length <= 2);
			paged.push(...page.identifiers.map((x) => x.name));
			if (!page.nextPageToken) break;
			token = page.nextPageToken;
		}
		assert.deepEqual(paged, all);
	});

	test('tables of a namespace that only one side has are listed', T, async () => {
		const w = (await client.listTables({ namespace: ['wh_only'] })).identifiers.map((i) => i.name);
		const l = (await client.listTables({ namespace: ['lh_only'] })).identifiers.map((i) => i.name);
		assert.deepEqual(w, ['legacy_bunnies']);
		assert.deepEqual(l, ['new_bunnies']);
	});

	test('a lakehouse-only namespace can be loaded', T, async () => {
		assert.equal(await client.namespaceExists({ namespace: ['lh_only'] }), true);
		const md = await client.loadNamespaceMetadata({ namespace: ['lh_only'] });
		assert.equal(md.properties.side, 'lakehouse');
		const db = await client.loadNamespaceMetadata({ namespace: ['db'] });
		assert.equal(db.properties.side, 'warehouse', 'a namespace both sides have comes from the warehouse');
		assert.equal(await client.namespaceExists({ namespace: ['no_such_ns'] }), false);
	});

	let whEtag;
	let athenaEtag;
	test('before the flip db.bunnies comes from the warehouse', T, async () => {
		await hook(wh, 'requests', 'DELETE');
		const { result, side, rows } = await loadBunnies();
		assert.equal(side, 'warehouse');
		assert.match(result['metadata-location'], /spark\/bunnies\/metadata\/v2\.metadata\.json$/);
		assert.equal(rows.length, 21);
		assert.equal(rows[0]['Breed Name'], 'Holland Lop');
		assert.equal(result.config['floe-test.side'], 'warehouse');
		assert.ok(result.etag, 'floe gives an ETag');
		whEtag = result.etag;
		// floe rewrote its prefix to the warehouse's own.
		const { requests } = await hook(wh, 'requests');
		assert.ok(
			requests.some((r) => r.method === 'GET' && r.url.startsWith('/v1/wh/namespaces/db/tables/bunnies')),
			JSON.stringify(requests.map((r) => r.url))
		);
		// An unchanged table answers 304 to floe's own ETag.
		const again = await loadBunnies(client, { ifNoneMatch: whEtag });
		assert.equal(again.result, null);
		// db.athena is the same metadata file on both sides, so both
		// catalogs give it the same ETag: floe's must still differ.
		const athena = await client.loadTableResult(ATHENA);
		assert.equal(seen.last.headers.get('x-floe-target'), 'warehouse');
		athenaEtag = athena.etag;
		assert.ok(athenaEtag);
		assert.equal(await client.loadTable(ATHENA, { ifNoneMatch: athenaEtag }), null);
	});

	test('LoadTable config carries the answering side\'s catalog settings', T, async () => {
		const { result } = await loadBunnies();
		assert.equal(result.config['s3.endpoint'], 'http://s3.warehouse.floe.test');
		assert.equal(result.config.prefix, undefined);
	});

	test('floectl assigns db.bunnies and db.athena to wave 1 and flips it', T, async () => {
		await floectl(['route', 'set', 'db.bunnies', '1']);
		await floectl(['route', 'set', 'db.athena', '1']);
		await floectl(['wave', 'flip', '1', 'lakehouse']);
	});

	test('after the flip db.bunnies comes from the lakehouse, other tables stay', T, async () => {
		const { result, side, wave, rows } = await loadBunnies();
		assert.equal(side, 'lakehouse');
		assert.equal(wave, '1');
		assert.match(result['metadata-location'], /spark\/bunnies\/metadata\/v5\.metadata\.json$/);
		assert.equal(result.config['floe-test.side'], 'lakehouse');
		assert.equal(result.config['s3.endpoint'], 'http://s3.lakehouse.floe.test');
		assert.equal(rows.length, 20);
		assert.equal(typeof rows[0].breed_name_length, 'number');
		// The warehouse's ETag must not keep the client on the warehouse copy.
		const cond = await loadBunnies(client, { ifNoneMatch: whEtag });
		assert.notEqual(cond.result, null, 'an ETag minted for the warehouse gave 304 after the flip');
		assert.equal(cond.side, 'lakehouse');
		assert.equal(cond.rows.length, 20);
		// Same upstream ETag on both sides: still no 304 across the flip.
		const ath = await client.loadTableResult(ATHENA, { ifNoneMatch: athenaEtag });
		assert.notEqual(ath, null, 'a warehouse ETag of db.athena gave 304 from the lakehouse');
		assert.equal(seen.last.headers.get('x-floe-target'), 'lakehouse');
		assert.notEqual(ath.etag, athenaEtag);
		assert.equal((await readRows(ath.metadata, lh.base)).length, 2);

		const java = await client.loadTableResult({ namespace: ['db'], name: 'java_bunnies' });
		assert.equal(seen.last.headers.get('x-floe-target'), 'warehouse');
		assert.equal((await readRows(java.metadata, wh.base)).length, 21);
	});

	test('the pinned lakehouse and warehouse prefixes ignore the wave', T, async () => {
		const pinW = new IcebergRestCatalog({ baseUrl: base, warehouse: 'warehouse', fetch: seen });
		const w = await loadBunnies(pinW);
		assert.equal(w.side, 'warehouse');
		assert.equal(w.rows.length, 21);
		const pinL = new IcebergRestCatalog({ baseUrl: base, warehouse: 'lakehouse', fetch: seen });
		const l = await loadBunnies(pinL, { snapshots: 'all' });
		assert.equal(l.side, 'lakehouse');
		assert.equal(l.rows.length, 20);
	});

	test('create, update and drop go to the authoritative side (warehouse)', T, async () => {
		await hook(wh, 'requests', 'DELETE');
		await hook(lh, 'requests', 'DELETE');
		const id = { namespace: ['db'], name: 'e2e_floe' };
		const md = await client.createTable({ namespace: ['db'] }, tableRequest('e2e_floe'));
		assert.equal(md['current-snapshot-id'], -1);
		let onWh = (await hook(wh, 'tables')).tables.map((t) => t.identifier);
		let onLh = (await hook(lh, 'tables')).tables.map((t) => t.identifier);
		assert.ok(onWh.includes('db.e2e_floe'), 'created on the warehouse');
		assert.ok(!onLh.includes('db.e2e_floe'), 'not on the lakehouse');

		const up = await client.updateTable(id, {
			requirements: [{ type: 'assert-table-uuid', uuid: md['table-uuid'] }],
			updates: [{ action: 'set-properties', updates: { 'floe.e2e': 'updated' } }],
		});
		assert.equal(up.metadata.properties['floe.e2e'], 'updated');
		const direct = await new IcebergRestCatalog({ baseUrl: wh.base, warehouse: 'x' }).loadTable(id);
		assert.equal(direct.properties['floe.e2e'], 'updated');
		const back = await client.loadTable(id);
		assert.equal(seen.last.headers.get('x-floe-target'), 'warehouse');
		assert.equal(back.properties['floe.e2e'], 'updated');
		assert.ok((await client.listTables({ namespace: ['db'] })).identifiers.some((i) => i.name === 'e2e_floe'));

		await client.dropTable(id);
		onWh = (await hook(wh, 'tables')).tables.map((t) => t.identifier);
		assert.ok(!onWh.includes('db.e2e_floe'), 'dropped on the warehouse');
		assert.equal(await client.tableExists(id), false);

		// A commit to db.bunnies while its wave reads from the lakehouse is
		// still a warehouse write (the warehouse is authoritative until frozen).
		const cur = await client.loadTable(BUNNIES);
		await client.updateTable(BUNNIES, {
			requirements: [{ type: 'assert-table-uuid', uuid: cur['table-uuid'] }],
			updates: [{ action: 'set-properties', updates: { 'floe.e2e.write': 'warehouse' } }],
		});
		const whReqs = (await hook(wh, 'requests')).requests;
		const lhReqs = (await hook(lh, 'requests')).requests;
		assert.ok(whReqs.some((r) => r.method === 'POST' && r.url.includes('/tables/bunnies')), 'commit on the warehouse');
		assert.ok(!lhReqs.some((r) => r.method === 'POST'), 'no write reached the lakehouse');
		assert.ok(!lhReqs.some((r) => r.method === 'DELETE'), 'no drop reached the lakehouse');
	});

	test('vended credentials come from the side that serves the read', T, async () => {
		const vend = new IcebergRestCatalog({
			baseUrl: base,
			warehouse: 'analytics',
			fetch: seen,
			accessDelegation: ['vended-credentials'],
		});
		const r = await vend.loadTableResult(BUNNIES);
		assert.equal(seen.last.headers.get('x-floe-target'), 'lakehouse');
		const creds = r['storage-credentials'];
		assert.ok(Array.isArray(creds) && creds.length === 1, 'the delegation header reached the catalog');
		assert.equal(creds[0].config['s3.secret-access-key'], 'fake-secret-lakehouse');
		const j = await vend.loadTableResult({ namespace: ['db'], name: 'java_bunnies' });
		assert.equal(j['storage-credentials'][0].config['s3.secret-access-key'], 'fake-secret-warehouse');
	});

	test('a rename within one side goes through, across sides it is refused', T, async () => {
		await hook(wh, 'requests', 'DELETE');
		await hook(lh, 'requests', 'DELETE');
		// db.bunnies reads from the lakehouse, an unassigned name from the warehouse.
		const renamed = { namespace: ['db'], name: 'bunnies_renamed' };
		try {
			await assert.rejects(client.renameTable({ source: BUNNIES, destination: renamed }), (e) => {
				assert.equal(e.status, 400, `status ${e.status}: ${e.message}`);
				assert.equal(e.icebergType, 'BadRequestException');
				return true;
			});
		} finally {
			// Should floe have let it through, undo it so later tests stand alone.
			for (const cat of [wh, lh]) {
				const direct = new IcebergRestCatalog({ baseUrl: cat.base, warehouse: 'x' });
				if (await direct.tableExists(renamed)) await direct.renameTable({ source: renamed, destination: BUNNIES });
			}
		}
		const posted = [...(await hook(wh, 'requests')).requests, ...(await hook(lh, 'requests')).requests];
		assert.ok(!posted.some((r) => r.url.includes('/rename')), 'the refused rename reached no catalog');
		// Two unassigned names: the warehouse renames it.
		const from = { namespace: ['db'], name: 'java_bunnies' };
		const to = { namespace: ['db'], name: 'java_bunnies_renamed' };
		await client.renameTable({ source: from, destination: to });
		const onWh = (await hook(wh, 'tables')).tables.map((t) => t.identifier);
		assert.ok(onWh.includes('db.java_bunnies_renamed') && !onWh.includes('db.java_bunnies'));
		await client.renameTable({ source: to, destination: from });
		assert.equal(await client.tableExists(from), true);
	});

	test('upstream failures reach iceberg-js as the spec says', T, async () => {
		// The lakehouse (serving wave 1's reads) answers bytes that are not HTTP.
		await hook(lh, 'fault', 'POST', { match: '/tables/bunnies', garbage: true });
		try {
			await assert.rejects(client.loadTable(BUNNIES), (e) => {
				assert.equal(e.status, 502, `status ${e.status}: ${e.message}`);
				assert.equal(typeof e.icebergType, 'string', 'an ErrorModel body');
				return true;
			});
		} finally {
			await hook(lh, 'fault', 'DELETE');
		}
		// The warehouse drops the connection on a commit: the state is unknown.
		await hook(wh, 'fault', 'POST', { match: '/tables/bunnies', reset: true });
		try {
			await assert.rejects(
				client.updateTable(BUNNIES, {
					requirements: [],
					updates: [{ action: 'set-properties', updates: { 'floe.e2e.lost': 'maybe' } }],
				}),
				(e) => {
					assert.equal(e.status, 502, `status ${e.status}: ${e.message}`);
					assert.equal(e.icebergType, 'CommitStateUnknownException');
					assert.ok(e.isCommitStateUnknown);
					return true;
				}
			);
		} finally {
			await hook(wh, 'fault', 'DELETE');
		}
		// Both sides serve again once the faults are gone.
		const { side, rows } = await loadBunnies();
		assert.equal(side, 'lakehouse');
		assert.equal(rows.length, 20);
	});

	let flippedRows;
	test('floectl wave rollback puts db.bunnies back on the warehouse', T, async () => {
		flippedRows = rowsText((await loadBunnies()).rows);
		await floectl(['wave', 'rollback', '1']);
		const { side, rows, result } = await loadBunnies();
		assert.equal(side, 'warehouse');
		assert.equal(rows.length, 21);
		assert.equal(rows[0]['Breed Name'], 'Holland Lop');
		assert.notEqual(rowsText(rows), flippedRows);
		assert.equal(result.metadata.properties['floe.e2e.write'], 'warehouse', 'the warehouse kept the write');
	});

	test('the operator rollback is a line of the rollback log', T, async () => {
		const file = path.join(dir, 'log', 'rollback.log');
		assert.ok(fs.existsSync(file), `${file} was not written`);
		const lines = fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean);
		assert.ok(lines.length >= 1, 'one line at least');
		const ev = JSON.parse(lines[lines.length - 1]);
		assert.match(JSON.stringify(ev), /rolled_back/);
		assert.match(JSON.stringify(ev), /"lakehouse"/, 'names the state it left');
	});

	test('a rolled-back wave refuses a flip until ack', T, async () => {
		await floectl(['wave', 'flip', '1', 'lakehouse'], 1);
		assert.equal((await loadBunnies()).side, 'warehouse');
		await floectl(['wave', 'ack', '1']);
		const { side, rows } = await loadBunnies();
		assert.equal(side, 'warehouse');
		assert.equal(rows.length, 21);
	});
});
