#!/usr/bin/env node
/**
 * Fingerprints of the simulator's behaviour, to show a change leaves it alone: for each shipped
 * workload, two seeds and the policies fifo, fair, improved-fair and tyrex, it runs `minimr sim`
 * (hashing the printed table and the report files, wall times taken out) and the simulator itself
 * (hashing the whole run record, every attempt and decision). Run it on two builds and diff:
 *
 *   node scripts/sim-fingerprint.mjs /path/to/old/checkout > old.txt
 *   node scripts/sim-fingerprint.mjs . > new.txt && diff old.txt new.txt
 *
 * A checkout here is a directory with bin/minimr.js and a built dist/. Optional second and third
 * arguments: the workloads and the seeds, comma-separated (default all shipped workloads, 1,2).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(process.argv[2] ?? '.');
const POLICIES = ['fifo', 'fair', 'improved-fair', 'tyrex'];
const WORKLOADS = process.argv[3]?.split(',') ?? [
  'hvw',
  'mvw',
  'lvw',
  'wkld-a',
  'wkld-b',
  'wkld-c',
  'wkld-d',
  'wkld-e',
  'yarn-me-uniform',
  'yarn-me-exp',
  'improved-fair',
];
const SEEDS = process.argv[4]?.split(',').map(Number) ?? [1, 2];

const sha = (text) => createHash('sha256').update(text).digest('hex').slice(0, 16);
const sim = await import(pathToFileURL(join(root, 'dist/src/sim/index.js')).href);
// The workload generators and cluster presets left src/sim for src/workloads; older builds keep them in sim.
const workloadsModule = join(root, 'dist/src/workloads/index.js');
const workloads = existsSync(workloadsModule) ? await import(pathToFileURL(workloadsModule).href) : sim;
const scheduler = await import(pathToFileURL(join(root, 'dist/src/scheduler/index.js')).href);

for (const workload of WORKLOADS) {
  for (const seed of SEEDS) {
    const out = mkdtempSync(join(tmpdir(), 'sim-fingerprint-'));
    const args = [
      join(root, 'bin/minimr.js'),
      'sim',
      '--workload',
      workload,
      '--seed',
      String(seed),
      '--out',
      out,
      ...POLICIES.flatMap((p) => ['--policy', p]),
    ];
    const table = execFileSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const files = readdirSync(out)
      .sort()
      .map((f) => {
        let text = readFileSync(join(out, f), 'utf8');
        if (f.endsWith('.json')) text = JSON.stringify(JSON.parse(text), (k, v) => (k === 'wallMs' ? undefined : v));
        return `${f}:${sha(text)}`;
      });
    rmSync(out, { recursive: true, force: true });
    process.stdout.write(`cli ${workload} seed=${seed} table=${sha(table)} ${files.join(' ')}\n`);
    const w = workloads.namedWorkload(workload, { seed });
    const cluster = workloads.clusterPreset(workloads.defaultClusterFor(workload));
    for (const policy of POLICIES) {
      const r = sim.simulate({ workload: w, cluster, policy: scheduler.createPolicy(policy), seed });
      process.stdout.write(
        `run ${workload} seed=${seed} ${policy} ` +
          `record=${sha(JSON.stringify(r.run))} ` +
          `decisions=${sha(JSON.stringify(r.decisions))} ` +
          `stats=${sha(JSON.stringify(r.stats))}\n`,
      );
    }
  }
}
