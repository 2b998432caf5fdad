// floe test catalog: lossless JSON, 64-bit ids kept exact.
'use strict';

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

module.exports = { BigNum, jparse, jstringify, idText, clone };
