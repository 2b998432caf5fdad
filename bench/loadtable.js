// floe: bench/loadtable.js -- writes the LoadTable results the bench
// upstream serves: a real Iceberg table metadata file (a fixture) wrapped as
// a LoadTableResult (metadata-location, metadata, config), grown with more
// snapshots -- each with its summary, manifest list, snapshot-log and
// metadata-log entries, as a table with a longer history has -- until the
// compact JSON reaches the size asked for.
//
//   node bench/loadtable.js FIXTURE.metadata.json BYTES OUT.json
'use strict';
const fs = require('fs');

const [src, bytesArg, out] = process.argv.slice(2);
if (!src || !bytesArg || !out) {
	console.error('usage: loadtable.js FIXTURE.metadata.json BYTES OUT.json');
	process.exit(2);
}
const want = Number(bytesArg);
// Iceberg ids are 64-bit integers, which a JS number cannot hold: read them
// as tagged strings and write them back as the integers they were.
const BIG = /("(?:snapshot-id|parent-snapshot-id|current-snapshot-id)"\s*:\s*)(-?\d+)/g;
const md = JSON.parse(fs.readFileSync(src, 'utf8').replace(BIG, '$1"#big#$2"'));
const big = (v) => `#big#${v}`;
const base = md.location;
const result = {
	'metadata-location': `${base}/metadata/00042-5f0c3b1e-7a7d-4c52-9d4e-0b3f1c2a9e11.metadata.json`,
	metadata: md,
	config: {
		'client.region': 'eu-west-1',
		's3.endpoint': 'https://s3.eu-west-1.amazonaws.com',
		's3.path-style-access': 'false',
	},
};

let seq = md['last-sequence-number'];
let parent = md['current-snapshot-id'];
let ts = md['last-updated-ms'];
let total = 22;
const version = md.snapshots[md.snapshots.length - 1].summary['iceberg-version'];

function addSnapshot() {
	seq += 1;
	ts += 3600 * 1000;
	total += 1000 + (seq % 7) * 113;
	const num = 4951213507629824583n + BigInt(seq) * 7919n * 104729n * 1000003n;
	const id = big(num);
	const uuid = `${(seq * 2654435761 >>> 0).toString(16).padStart(8, '0')}-6c1e-4a8e-9b2f-${String(seq).padStart(12, '0')}`;
	md.snapshots.push({
		'sequence-number': seq,
		'snapshot-id': id,
		'parent-snapshot-id': parent,
		'timestamp-ms': ts,
		summary: {
			operation: 'append',
			'added-data-files': '1',
			'added-records': String(1000 + (seq % 7) * 113),
			'added-files-size': String(48211 + seq * 17),
			'changed-partition-count': '1',
			'total-records': String(total),
			'total-files-size': String(10274 + seq * 48228),
			'total-data-files': String(seq),
			'total-delete-files': '2',
			'total-position-deletes': '6',
			'total-equality-deletes': '1',
			'iceberg-version': version,
		},
		'manifest-list': `${base}/metadata/snap-${num}-1-${uuid}.avro`,
		'schema-id': md['current-schema-id'],
	});
	md['snapshot-log'].push({ 'timestamp-ms': ts, 'snapshot-id': id });
	md['metadata-log'].push({
		'timestamp-ms': ts,
		'metadata-file': `${base}/metadata/v${seq + 2}.metadata.json`,
	});
	md['current-snapshot-id'] = id;
	md.refs.main['snapshot-id'] = id;
	md['last-sequence-number'] = seq;
	md['last-updated-ms'] = ts;
	parent = id;
}

const render = () => JSON.stringify(result).replace(/"#big#(-?\d+)"/g, '$1');
let text = render();
let prev = text;
// Grow in large steps first, then one snapshot at a time; keep whichever
// of the last two sizes is closer to the one asked for.
while (text.length < want) {
	const step = Math.max(1, Math.floor((want - text.length) / 1400));
	for (let i = 0; i < step; i++) addSnapshot();
	prev = text;
	text = render();
}
if (want - prev.length < text.length - want && prev.length > 0) text = prev;
const nsnap = (text.match(/"manifest-list"/g) || []).length;
fs.writeFileSync(out, text);
console.log(`${out}: ${text.length} bytes, ${nsnap} snapshots`);
