// floe's own credentials for the catalogs, end to end with iceberg-js: the
// warehouse wants OAuth2 client-credentials tokens (checked by the test
// catalog at tests/catauth/tokens.py's introspection endpoint), the
// lakehouse AWS SigV4 (every request recomputed with botocore by
// tests/catauth/sigcheck.py); then a warehouse behind a Google service
// account (the RS256 assertion verified with PyJWT by tokens.py). The
// client itself sends no credential: floe's go on every request, and
// icebird reads the rows of the table floe returned.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
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
	run,
	startCatalog,
	stop,
	tableRequest,
	waitReady,
} from './lib.mjs';

const FLOE = path.resolve(TOP, process.env.FLOE || 'build/floe');
const FLOECTL = path.resolve(TOP, process.env.FLOECTL || 'build/floectl');
const TOKENS = path.join(TOP, 'tests/catauth/tokens.py');
const BUNNIES = { namespace: ['db'], name: 'bunnies' };
const EMAIL = 'floe@proj.iam.gserviceaccount.com';
const T = { timeout: 30000 };

// tokens.py with ARGS; resolves to {child, port} once it printed "ready".
async function startTokens(args) {
	const child = spawn('/usr/bin/python3', [TOKENS, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
	let err = '';
	child.stderr.on('data', (d) => (err += d));
	const port = await new Promise((resolve, reject) => {
		let out = '';
		const t = setTimeout(() => reject(new Error(`tokens.py did not start: ${err}`)), 10000);
		child.stdout.on('data', (d) => {
			out += d;
			const m = /^ready (\d+)$/m.exec(out);
			if (m) {
				clearTimeout(t);
				resolve(Number(m[1]));
			}
		});
	});
	return { child, port, base: `http://127.0.0.1:${port}` };
}

// Write FILE with TEXT, mode 0600 (floe refuses secrets others may read).
function secret(file, text) {
	fs.writeFileSync(file, text, { mode: 0o600 });
	return file;
}

// A floe in DIR in front of WH and LH with extra [warehouse] and
// [lakehouse] lines; resolves to {child, base, conf, output()}.
async function startFloe(dir, wh, lh, whLines, lhLines, env = {}) {
	const port = await freePort();
	const conf = path.join(dir, 'floe.conf');
	fs.mkdirSync(path.join(dir, 'state'), { recursive: true });
	fs.writeFileSync(
		conf,
		[
			'[floe]',
			`listen = 127.0.0.1:${port}`,
			`admin_socket = ${path.join(dir, 'floe.sock')}`,
			`state_dir = ${path.join(dir, 'state')}`,
			`rollback_log = ${path.join(dir, 'rollback.log')}`,
			'cache_size = 0',
			'[warehouse]',
			`uri = ${wh.base}`,
			'warehouse = analytics',
			...whLines,
			'[lakehouse]',
			`uri = ${lh.base}`,
			...lhLines,
			'[policy]',
			'gate_min_clean = 0',
			'',
		].join('\n')
	);
	const child = spawn(FLOE, ['-c', conf], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
	let out = '';
	child.stdout.on('data', (d) => (out += d));
	child.stderr.on('data', (d) => (out += d));
	const base = `http://127.0.0.1:${port}`;
	try {
		await waitReady(`${base}/readyz`, child, 15000, `floe (${FLOE})`);
	} catch (e) {
		e.message += `\nfloe output:\n${out.slice(-4000)}`;
		throw e;
	}
	return { child, base, conf, output: () => out };
}

describe('floe with OAuth2 and SigV4 catalogs, iceberg-js', () => {
	let dir, tokens, wh, lh, floe, client;
	const seen = recordingFetch();
	const sides = {};

	before(async () => {
		for (const f of [FLOE, FLOECTL]) if (!isExecutable(f)) throw new Error(`not built: ${f}`);
		dir = fs.mkdtempSync(path.join(os.tmpdir(), 'floe-e2e-auth-'));
		secret(path.join(dir, 'wh.secret'), 'e2e-client-secret\n');
		tokens = await startTokens(['--client-id', 'floe-e2e', '--secret-file', path.join(dir, 'wh.secret')]);
		const creds = { akid: 'AKIAE2EFLOE', secret: 'e2e/secret+key', token: null, region: 'us-east-1', service: 'glue' };
		fs.writeFileSync(path.join(dir, 'lh.json'), JSON.stringify(creds));
		[wh, lh] = await Promise.all([
			startCatalog('warehouse', ['--prefix', 'wh', '--introspect', `${tokens.base}/introspect`]),
			startCatalog('lakehouse', ['--sigv4', path.join(dir, 'lh.json')]),
		]);
		sides.warehouse = wh;
		sides.lakehouse = lh;
		floe = await startFloe(
			dir,
			wh,
			lh,
			[
				'auth = oauth2',
				`oauth_token_uri = ${tokens.base}/oauth/tokens`,
				'client_id = floe-e2e',
				`client_secret_file = ${path.join(dir, 'wh.secret')}`,
				'scope = PRINCIPAL_ROLE:ALL',
			],
			['auth = sigv4', 'sigv4_region = us-east-1'],
			{ AWS_ACCESS_KEY_ID: creds.akid, AWS_SECRET_ACCESS_KEY: creds.secret, AWS_SESSION_TOKEN: '' }
		);
		client = new IcebergRestCatalog({ baseUrl: floe.base, warehouse: 'analytics', fetch: seen });
	});

	after(async () => {
		if (floe) await stop(floe.child);
		if (wh) await stop(wh.child);
		if (lh) await stop(lh.child);
		if (tokens) await stop(tokens.child);
		await killAll();
		if (dir) fs.rmSync(dir, { recursive: true, force: true });
	});

	test('listings ask both catalogs, each with its credential', T, async () => {
		const names = (await client.listNamespaces()).namespaces.map((n) => n.namespace.join('.'));
		for (const want of ['db', 'wh_only', 'lh_only']) assert.ok(names.includes(want), `${want} in ${names}`);
		const tables = (await client.listTables({ namespace: ['db'] })).identifiers.map((i) => i.name);
		assert.ok(tables.includes('wh_bunnies') && tables.includes('lh_bunnies'), `${tables}`);
	});

	test('a load from each side, rows read with icebird', T, async () => {
		let r = await client.loadTableResult(BUNNIES);
		assert.equal(seen.last.headers.get('x-floe-target'), 'warehouse');
		assert.equal((await readRows(r.metadata, wh.base)).length, 21);
		const ctl = await run(FLOECTL, ['-c', floe.conf, 'route', 'set', 'db.bunnies', '1']);
		assert.equal(ctl.code, 0, ctl.stderr);
		assert.equal((await run(FLOECTL, ['-c', floe.conf, 'wave', 'flip', '1', 'lakehouse'])).code, 0);
		r = await client.loadTableResult(BUNNIES);
		assert.equal(seen.last.headers.get('x-floe-target'), 'lakehouse');
		assert.equal((await readRows(r.metadata, lh.base)).length, 20);
	});

	test('create, commit and drop on the OAuth2 warehouse', T, async () => {
		const id = { namespace: ['db'], name: 'e2e_auth' };
		const md = await client.createTable({ namespace: ['db'] }, tableRequest('e2e_auth'));
		const up = await client.updateTable(id, {
			requirements: [{ type: 'assert-table-uuid', uuid: md['table-uuid'] }],
			updates: [{ action: 'set-properties', updates: { 'floe.auth': 'oauth2' } }],
		});
		assert.equal(up.metadata.properties['floe.auth'], 'oauth2');
		await client.dropTable(id);
		assert.equal(await client.tableExists(id), false);
	});

	test('every request carried floe credential and was accepted', T, async () => {
		// icebird reads the files directly, not through floe.
		const viaFloe = (q) => !q.url.startsWith('/files/');
		const w = (await hook(wh, 'requests')).requests.filter(viaFloe);
		assert.ok(w.length > 5);
		for (const q of w) assert.match(q.headers.authorization || '', /^Bearer tok-/, `${q.method} ${q.url}`);
		const l = (await hook(lh, 'requests')).requests.filter(viaFloe);
		assert.ok(l.length > 3);
		for (const q of l) assert.equal(q.sigv4, 'ok', `${q.method} ${q.url}`);
		assert.ok(!/tok-\d+-|e2e\/secret|e2e-client-secret/.test(floe.output()), 'no secret in floe output');
	});
});

describe('floe with a Google service-account catalog, iceberg-js', () => {
	let dir, tokens, wh, lh, floe;

	before(async () => {
		dir = fs.mkdtempSync(path.join(os.tmpdir(), 'floe-e2e-google-'));
		const key = path.join(dir, 'sa.pem');
		execFileSync('openssl', ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', key], { stdio: 'ignore' });
		execFileSync('openssl', ['pkey', '-in', key, '-pubout', '-out', path.join(dir, 'sa.pub')], { stdio: 'ignore' });
		secret(path.join(dir, 'unused'), 'unused\n');
		tokens = await startTokens([
			'--client-id',
			'unused',
			'--secret-file',
			path.join(dir, 'unused'),
			'--google-pub',
			path.join(dir, 'sa.pub'),
			'--google-email',
			EMAIL,
		]);
		secret(
			path.join(dir, 'sa.json'),
			JSON.stringify({
				type: 'service_account',
				private_key_id: 'kid-1',
				private_key: fs.readFileSync(key, 'utf8'),
				client_email: EMAIL,
				token_uri: `${tokens.base}/google/token`,
			})
		);
		[wh, lh] = await Promise.all([
			startCatalog('warehouse', ['--introspect', `${tokens.base}/introspect`]),
			startCatalog('lakehouse'),
		]);
		floe = await startFloe(dir, wh, lh, ['auth = google', `google_key_file = ${path.join(dir, 'sa.json')}`], []);
	});

	after(async () => {
		if (floe) await stop(floe.child);
		if (wh) await stop(wh.child);
		if (lh) await stop(lh.child);
		if (tokens) await stop(tokens.child);
		await killAll();
		if (dir) fs.rmSync(dir, { recursive: true, force: true });
	});

	test('iceberg-js loads through floe with the service account token', T, async () => {
		const client = new IcebergRestCatalog({ baseUrl: floe.base, warehouse: 'analytics' });
		const r = await client.loadTableResult(BUNNIES);
		assert.equal(r.config['floe-test.side'], 'warehouse');
		const st = await (await fetch(`${tokens.base}/stats`)).json();
		assert.equal(st.last_auth, 'jwt');
		assert.equal(st.refused, 0);
		assert.equal(st.last_scope, 'https://www.googleapis.com/auth/cloud-platform');
	});
});
