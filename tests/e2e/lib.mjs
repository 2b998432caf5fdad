// Helpers for floe's e2e tests: start the test catalogs (and floe) as child
// processes, read table rows with icebird from the files a catalog serves,
// and wrap fetch so tests can see response headers.
import { spawn, execFile } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { icebergRead } from 'icebird';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const TOP = path.resolve(HERE, '../..');
export const CATALOG_JS = path.join(TOP, 'tests/catalog/catalog.js');

const children = new Set();

// Kill every child still running (by pid), e.g. when a test aborts.
export async function killAll() {
	await Promise.all([...children].map((c) => stop(c)));
}

// SIGTERM CHILD by its pid and wait for it; SIGKILL after 3 s.
export async function stop(child) {
	if (!child || child.exitCode !== null || child.signalCode !== null) {
		children.delete(child);
		return;
	}
	const done = once(child, 'exit');
	try {
		process.kill(child.pid, 'SIGTERM');
	} catch {
		/* already gone */
	}
	const t = setTimeout(() => {
		try {
			process.kill(child.pid, 'SIGKILL');
		} catch {
			/* already gone */
		}
	}, 3000);
	await done;
	clearTimeout(t);
	children.delete(child);
}

// Start a test catalog: NAME warehouse|lakehouse, extra ARGS. Resolves to
// {child, port, base, name} once it printed "ready PORT".
export async function startCatalog(name, args = []) {
	const child = spawn(process.execPath, [CATALOG_JS, '--port', '0', '--name', name, ...args], {
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	children.add(child);
	let err = '';
	child.stderr.on('data', (d) => {
		err += d;
	});
	const port = await new Promise((resolve, reject) => {
		let out = '';
		const t = setTimeout(() => reject(new Error(`catalog ${name} did not start in 10 s: ${err}`)), 10000);
		child.stdout.on('data', (d) => {
			out += d;
			const m = /^ready (\d+)$/m.exec(out);
			if (m) {
				clearTimeout(t);
				resolve(Number(m[1]));
			}
		});
		child.on('exit', (code) => {
			clearTimeout(t);
			reject(new Error(`catalog ${name} exited with ${code}: ${err}`));
		});
	});
	return { child, port, name, base: `http://127.0.0.1:${port}`, stderr: () => err };
}

// A TCP port that was free a moment ago on 127.0.0.1.
export async function freePort() {
	const srv = net.createServer();
	srv.listen(0, '127.0.0.1');
	await once(srv, 'listening');
	const { port } = srv.address();
	srv.close();
	await once(srv, 'close');
	return port;
}

// JSON from a test catalog's hook (GET /_test/...), or DELETE it.
export async function hook(cat, what, method = 'GET', body) {
	const res = await fetch(`${cat.base}/_test/${what}`, {
		method,
		headers: body ? { 'Content-Type': 'application/json' } : {},
		body: body ? JSON.stringify(body) : undefined,
	});
	if (res.status === 204) return null;
	return res.json();
}

// A fetch for iceberg-js that remembers the last response's headers.
export function recordingFetch() {
	const f = async (url, init) => {
		const res = await fetch(url, init);
		f.last = { url: String(url), status: res.status, headers: res.headers };
		f.log.push(f.last);
		return res;
	};
	f.log = [];
	f.last = null;
	return f;
}

// icebird fetches with the global fetch and maps s3a://B/K to
// https://B.s3.amazonaws.com/K. Send those to FILES_BASE/files/s3/B/K.
let filesBase = null;
const realFetch = globalThis.fetch;
globalThis.fetch = (url, init) => {
	const s = typeof url === 'string' ? url : url instanceof URL ? url.href : url.url;
	const m = /^https:\/\/([^/]+)\.s3\.amazonaws\.com\/(.*)$/.exec(s);
	if (m) {
		if (!filesBase) throw new Error(`no file server set for ${s}`);
		return realFetch(`${filesBase}/files/s3/${m[1]}/${m[2]}`, init);
	}
	return realFetch(url, init);
};

// Rows of the table whose METADATA (TableMetadata from a LoadTableResult) a
// catalog returned, read with icebird from the files served at FILESBASE.
export async function readRows(metadata, filesbase) {
	filesBase = filesbase;
	try {
		return await icebergRead({ tableUrl: metadata.location, metadata });
	} finally {
		filesBase = null;
	}
}

// Run PROG with ARGS; resolves to {code, stdout, stderr} (never rejects).
export function run(prog, args, opts = {}) {
	return new Promise((resolve) => {
		execFile(prog, args, { timeout: 20000, ...opts }, (err, stdout, stderr) => {
			let code = 0;
			if (err) code = typeof err.code === 'number' ? err.code : -1;
			resolve({ code, stdout: String(stdout), stderr: String(stderr), error: err });
		});
	});
}

// True when FILE exists and is executable.
export function isExecutable(file) {
	try {
		fs.accessSync(file, fs.constants.X_OK);
		return fs.statSync(file).isFile();
	} catch {
		return false;
	}
}

// Poll URL until it answers 200, the child exits, or TIMEOUT ms pass.
export async function waitReady(url, child, timeout, describe) {
	const end = Date.now() + timeout;
	let last = 'no answer';
	while (Date.now() < end) {
		if (child.exitCode !== null || child.signalCode !== null)
			throw new Error(`${describe} exited (${child.exitCode ?? child.signalCode}) before ${url} was ready`);
		try {
			const res = await realFetch(url);
			await res.arrayBuffer();
			if (res.status === 200) return;
			last = `status ${res.status}`;
		} catch (e) {
			last = e.cause ? e.cause.code || e.message : e.message;
		}
		await new Promise((r) => setTimeout(r, 100));
	}
	throw new Error(`${describe}: ${url} not ready after ${timeout} ms (last: ${last})`);
}

// Deterministic JSON of rows (icebird gives BigInt for longs).
export function rowsText(rows) {
	return JSON.stringify(rows, (k, v) => (typeof v === 'bigint' ? `${v}n` : v));
}

// A small create-table request body.
export function tableRequest(name) {
	return {
		name,
		schema: {
			type: 'struct',
			'schema-id': 0,
			fields: [
				{ id: 1, name: 'id', type: 'long', required: true },
				{ id: 2, name: 'note', type: 'string', required: false },
			],
		},
		'partition-spec': { 'spec-id': 0, fields: [] },
		'write-order': { 'order-id': 0, fields: [] },
		properties: { 'created-by': 'floe-e2e' },
	};
}
