// Lists the compiled test files of one tier for `node --test` (Node 20 takes no globs and sh has no
// negated one): `unit` is every file outside dist/test/cluster/, `cluster` the files in it, `all`
// both, unit first. The slowest unit files go first: two run at a time, and one of ~25 s started
// last would run alone at the end (test:unit went from 61.5 s to 58.5 s on this machine).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const SLOW_FIRST = [
  'dist/test/storage/record-readers.test.js',
  'dist/test/scheduler/describe-state.test.js',
  'dist/test/scheduler/yarn-me.test.js',
];

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(join(dir, e.name)) : e.name.endsWith('.test.js') ? [join(dir, e.name)] : [],
  );
}

const all = testFiles('dist/test').sort();
const cluster = all.filter((f) => f.startsWith('dist/test/cluster/'));
const unitRest = all.filter((f) => !f.startsWith('dist/test/cluster/'));
const unit = [...SLOW_FIRST.filter((f) => unitRest.includes(f)), ...unitRest.filter((f) => !SLOW_FIRST.includes(f))];
const tier = process.argv[2];
const chosen = tier === 'unit' ? unit : tier === 'cluster' ? cluster : tier === 'all' ? [...unit, ...cluster] : null;
if (!chosen) {
  process.stderr.write('usage: node scripts/test-files.mjs unit|cluster|all\n');
  process.exit(2);
}
process.stdout.write(`${chosen.join('\n')}\n`);
