// floe test catalog: HTTP plumbing (path segments, answers, pages, bodies).
'use strict';

const { bad } = require('./errors.js');
const { jparse, jstringify } = require('./json.js');

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

module.exports = { decodeLevel, decodeNamespace, send, sendError, paginate, readBody, parseJson, ENDPOINTS };
