// floe test catalog: its errors, the Iceberg ErrorModel types as exceptions.
'use strict';

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

module.exports = { ERR_TYPES, HttpError, bad, noNs, noTable, noView, exists, commitFailed };
