/**
 * The simulator's scale figures (issue 13): under FIFO, a 300-job Tyrex HVW workload on tyrex-20
 * (20 workers, 6 map + 2 reduce slots) in under 0.5 s, 3000 YARN-ME-style jobs on yarn-me-3000
 * (3000 workers x 16 cores x 10 GB) in at most 10 s, and 30,000 such jobs on the same cluster in
 * under 2 minutes. Wall time covers the simulation run alone (workload generation excluded), in
 * this process; each case is run --repeats times (default 3: the first cold, the others warm) and
 * the median is judged; every run's time is in the JSON.
 *
 * The big traces are YARN-ME's uniform trace scaled 30x and 300x, with arrivals stretched so the
 * offered memory load is 0.5 (the DSS setting, arrivals within 1000 s, is ~25x overloaded).
 *
 * Run: npm run bench:sim-scale   Writes bench-results/sim-scale/sim-scale.json and sim-scale.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { FifoPolicy } from '../src/scheduler/index.js';
import { simulate } from '../src/sim/index.js';
import { clusterPreset, tyrexWorkload, yarnMeTrace, type ClusterShape, type Workload } from '../src/workloads/index.js';

interface Row {
  case: string;
  jobs: number;
  workers: number;
  tasks: number;
  events: number;
  policyCalls: number;
  simulatedHours: number;
  /** Median of `walls` (in run order: the first is cold, the others warm). */
  wallS: number;
  walls: number[];
  eventsPerS: number;
  targetS: number;
  pass: boolean;
}

const repeatsArg = process.argv.indexOf('--repeats');
const REPEATS = repeatsArg >= 0 ? Number(process.argv[repeatsArg + 1]) : 3;
if (!Number.isInteger(REPEATS) || REPEATS < 1) throw new Error('--repeats must be a whole number >= 1');

function run(label: string, workload: Workload, cluster: ClusterShape, targetS: number): Row {
  const walls: number[] = [];
  let r: ReturnType<typeof simulate> | undefined;
  for (let i = 0; i < REPEATS; i++) {
    process.stderr.write(
      `${label}: ${workload.jobs.length} jobs on ${cluster.workers.length} workers, run ${i + 1}/${REPEATS} ...\n`,
    );
    const started = performance.now();
    r = simulate({
      workload,
      cluster,
      policy: new FifoPolicy(),
      // Speed is measured, not the run's details: a 30,000-job log would fill the heap.
      recordDecisions: false,
      recordAttempts: false,
      onProgress: (p) =>
        process.stderr.write(
          `  t=${(p.simMs / 1000).toFixed(0)} ` +
            `s, ${p.jobsDone}/${p.jobsTotal} ` +
            `jobs, ${((performance.now() - started) / 1000).toFixed(1)} s ` +
            `wall\n`,
        ),
    });
    walls.push((performance.now() - started) / 1000);
  }
  const wallS = [...walls].sort((a, b) => a - b)[Math.floor(walls.length / 2)]!;
  if (!r) throw new Error('no run');
  const unfinished = r.run.jobs.filter((j) => j.state !== 'succeeded').length;
  if (unfinished > 0) throw new Error(`${label}: ${unfinished} jobs did not finish`);
  return {
    case: label,
    jobs: workload.jobs.length,
    workers: cluster.workers.length,
    tasks: workload.jobs.reduce((s, j) => s + j.maps.length + j.reduces.length, 0),
    events: r.stats.events,
    policyCalls: r.stats.policyCalls,
    simulatedHours: r.stats.simulatedMs / 3_600_000,
    wallS,
    eventsPerS: r.stats.events / wallS,
    targetS,
    walls,
    pass: wallS <= targetS,
  };
}

const tyrex = clusterPreset('tyrex-20');
const big = clusterPreset('yarn-me-3000');
const bigMemoryMb = big.workers.reduce((s, w) => s + w.memoryMb, 0);
const rows = [
  run('Tyrex HVW, FIFO', tyrexWorkload({ variant: 'hvw', seed: 1 }), tyrex, 0.5),
  run(
    'YARN-ME uniform x30, FIFO',
    yarnMeTrace({ kind: 'uniform', seed: 1, scale: 30, load: 0.5, clusterMemoryMb: bigMemoryMb }),
    big,
    10,
  ),
  run(
    'YARN-ME uniform x300, FIFO',
    yarnMeTrace({ kind: 'uniform', seed: 1, scale: 300, load: 0.5, clusterMemoryMb: bigMemoryMb }),
    big,
    120,
  ),
];

const head = [
  'case',
  'jobs',
  'workers',
  'tasks',
  'events',
  'policy calls',
  'simulated h',
  'wall s',
  'events/s',
  'target',
  'result',
];
const md = [
  `| ${head.join(' | ')} |`,
  `|${head.map(() => '---').join('|')}|`,
  ...rows.map(
    (r) =>
      `| ${[r.case, r.jobs, r.workers, r.tasks, r.events, r.policyCalls, r.simulatedHours.toFixed(2), r.wallS.toFixed(2), Math.round(r.eventsPerS), `<= ${r.targetS} s`, r.pass ? 'PASS' : 'FAIL'].join(' | ')} ` +
      `|`,
  ),
].join('\n');
const dir = join('bench-results', 'sim-scale');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'sim-scale.json'), `${JSON.stringify({ node: process.version, rows }, null, 2)}\n`);
writeFileSync(join(dir, 'sim-scale.md'), `# Simulator scale (npm run bench:sim-scale)\n\n${md}\n`);
process.stdout.write(`${md}\n`);
