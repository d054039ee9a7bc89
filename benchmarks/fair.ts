/**
 * FAIR vs improved FAIR on the improved-FAIR scenario (docs/specs/fair-and-improved-fair.md): TeraSort
 * (I/O-bound) and GrepCount (CPU-bound) fill the cluster, then WordCount arrives with a private
 * data set on one rack and a minimum share of a third of the map slots; preemption makes room.
 *
 * 1. Simulator, paper scale: 12 workers in 3 racks of 4, 8 map slots each, 10 GB per job in 64 MB
 *    blocks. Preemption timeouts T_min = 5 s, T_fair = 10 s (the paper gives none; Hadoop's defaults
 *    are sized for hour-long jobs, these for 15-40 s maps).
 * 2. Real local cluster, scaled down: `--workers` (default 6) in `--racks` (default 3), 2 map + 1
 *    reduce slot each, the same jobs with maps scaled by the ratio of map slots (12/96 for 6 workers;
 *    `--workers 12` keeps the paper's 3 racks of 4 at 24/96), `--bytes-per-map` per map. Arrival
 *    times and timeouts are scaled by the ratio of real to simulated map times (8 MiB maps measured
 *    here: TeraSort ~4 s against 15 s, GrepCount ~13 s against 40 s: 0.3), so WordCount arrives, as
 *    in the simulator, after TeraSort's first maps have finished and its character is known, and
 *    preemption waits as long relative to a map. GrepCount uses a backtracking pattern so its
 *    maps are CPU-bound as in the paper; the workers report `--disk-mbps` as their disk rate, the
 *    rate that makes TeraSort (map output = input) I/O-bound at these sizes by the rule of
 *    docs/specs/fair-and-improved-fair.md.
 *
 * WordCount's data set arrives with it: one replica per block written, the second owed for
 * T_min + T_fair; improved FAIR places owed replicas on the nodes its kills free, the rest go to the
 * holder's rack when the window closes, under either policy.
 *
 * Per policy: data moved (map input read from other nodes, from other racks, extra copies, and
 * their sum), owed replicas placed and completed (upload traffic, equal in total under both),
 * bytes re-read and slot-seconds lost to kills, each job's completion time, WordCount's node-local
 * maps, and improved FAIR minus FAIR pair by pair with standard errors. Target: improved FAIR moves
 * less data and finishes WordCount no later than FAIR, in both. Writes
 * bench-results/fair/{fair.json,fair.md,data-moved.svg} and the real runs' records (runs-real.json).
 *
 * Run: npm run bench:fair [-- --bytes-per-map 8m --time-scale 0.3 --disk-mbps 10 --repeats 10 --sim-seeds 30 --no-real]
 * (about 30 minutes with the real runs: 20 runs of ~80 s, a policy's runs interleaved with the other's)
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import yargs from 'yargs';
import { realCluster, runWorkloadOnCluster, scaleWorkload } from '../src/experiments/index.js';
import { computeMetrics, type RunRecord } from '../src/metrics/index.js';
import { comparePolicies } from '../src/experiments/index.js';
import { clusterPreset, namedWorkload, type Workload } from '../src/workloads/index.js';
import { barChartFiles, meanWithStandardError, parseSize } from '../src/util/index.js';
import { median } from './lib/shell.js';

const SELF = fileURLToPath(import.meta.url);
const OUT = resolve(dirname(SELF), '..', '..', 'bench-results', 'fair');
const POLICIES = ['fair', 'improved-fair'] as const;
const T0 = Date.now();
const log = (m: string) => process.stderr.write(`[${((Date.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${m}\n`);

const args = yargs(process.argv.slice(2))
  .option('real', { type: 'boolean', default: true })
  .option('bytes-per-map', { type: 'string', default: '8m' })
  .option('time-scale', {
    type: 'number',
    default: 0.3,
    describe: 'real ms per simulated ms for arrivals (real maps take ~0.3x the simulated ones here)',
  })
  .option('disk-mbps', { type: 'number', default: 10 })
  .option('t-min-ms', { type: 'number', default: 1500, describe: 'real run: T_min' })
  .option('t-fair-ms', { type: 'number', default: 3000, describe: 'real run: T_fair' })
  .option('delay-ms', { type: 'number', default: 500, describe: 'real run: node- and rack-local delay' })
  .option('workers', {
    type: 'number',
    default: 6,
    describe: 'real run: worker processes (2 map + 1 reduce slot each)',
  })
  .option('racks', { type: 'number', default: 3, describe: 'real run: racks the workers are spread over' })
  .option('sim-seeds', {
    type: 'number',
    default: 30,
    describe: 'simulator runs per policy, one per workload seed; the verdict uses their means',
  })
  .option('repeats', {
    type: 'number',
    default: 10,
    describe:
      'real runs per policy, interleaved (fair, improved-fair, fair, ' +
      '...); the verdict uses their means (a WordCount run varies by ' +
      '+-5 s here: fewer runs cannot tell 1 s apart)',
  })
  .option('grep-pattern', { type: 'string', default: '(?:\\w+\\s)+?q[a-e](?:\\w+\\s)+?x[a-c]' })
  .check((a) => {
    if (!Number.isInteger(a['sim-seeds']) || a['sim-seeds'] < 1)
      throw new Error(`--sim-seeds must be a whole number >= 1, got ${a['sim-seeds']}`);
    if (!Number.isInteger(a.repeats) || a.repeats < 1)
      throw new Error(`--repeats must be a whole number of runs >= 1, got ${a.repeats}`);
    if (!Number.isInteger(a.workers) || !Number.isInteger(a.racks) || a.racks < 1 || a.workers < a.racks) {
      throw new Error(
        `--workers and --racks must be whole numbers with 1 <= racks <= workers, got ${a.workers} and ${a.racks}`,
      );
    }
    return true;
  })
  .strict()
  .parseSync();

interface Row {
  readonly where: 'sim' | 'real';
  readonly policy: string;
  readonly remoteBytes: number;
  readonly offRackBytes: number;
  /** Copies beyond the input's replication (data moved). */
  readonly extraCopyBytes: number;
  /**
   * Owed replicas of the private data set: written where improved FAIR placed them, or on the rack when the window
   * closed (upload traffic under any policy).
   */
  readonly placedBytes: number;
  readonly completedBytes: number;
  readonly networkBytes: number;
  readonly rereadBytes: number;
  readonly killed: number;
  readonly killedSlotSeconds: number;
  readonly jctS: Record<string, number>;
  readonly wordcountLocal: string;
  /** Which real run (1..repeats) or simulator seed; absent for means. */
  readonly repeat?: number;
}

function rowOf(where: 'sim' | 'real', policy: string, run: RunRecord): Row {
  const m = computeMetrics(run, {});
  const d = m.dataMovement;
  const jctS: Record<string, number> = {};
  for (const j of run.jobs) jctS[j.app] = j.finishMs === null ? Number.NaN : (j.finishMs - j.submitMs) / 1000;
  const wc = run.jobs.find((j) => j.app === 'wordcount')!;
  const wcMaps = run.attempts.filter((a) => a.jobId === wc.id && a.kind === 'map' && a.outcome === 'succeeded');
  return {
    where,
    policy,
    remoteBytes: d.remoteNodeBytes,
    offRackBytes: d.remoteRackBytes,
    extraCopyBytes: d.replicatedBytes,
    placedBytes: d.placedBytes,
    completedBytes: d.completedBytes,
    networkBytes: d.networkBytes,
    rereadBytes: d.rereadBytes,
    killed: d.killedAttempts,
    killedSlotSeconds: d.killedSlotSeconds,
    jctS,
    wordcountLocal: `${wcMaps.filter((a) => a.locality === 'node').length}/${wcMaps.length}`,
  };
}

function table(rows: readonly Row[], unit: 'GiB' | 'MiB'): string {
  const div = unit === 'GiB' ? 2 ** 30 : 2 ** 20;
  const f = (b: number) => (b / div).toFixed(2);
  const lines = [
    `| policy | data moved ${unit} (remote reads + extra copies) | ` +
      `remote reads ${unit} | of which off-rack | extra copies ${unit} ` +
      `| owed replicas placed / completed ${unit} | re-read after ` +
      `kills ${unit} | kills | killed slot-s | WordCount JCT s | ` +
      `TeraSort JCT s | GrepCount JCT s | WordCount maps node-local |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.repeat !== undefined ? `${r.policy} ${r.where === 'sim' ? 'seed' : 'run'} ${r.repeat}` : r.policy} ` +
        `| ${f(r.networkBytes)} | ${f(r.remoteBytes)} ` +
        `| ${f(r.offRackBytes)} | ${f(r.extraCopyBytes)} ` +
        `| ${f(r.placedBytes)} / ${f(r.completedBytes)} ` +
        `| ${f(r.rereadBytes)} ` +
        `| ${Number.isInteger(r.killed) ? r.killed : r.killed.toFixed(1)} ` +
        `| ${r.killedSlotSeconds.toFixed(1)} ` +
        `| ${(r.jctS.wordcount ?? NaN).toFixed(1)} ` +
        `| ${(r.jctS.terasort ?? NaN).toFixed(1)} ` +
        `| ${(r.jctS.grepcount ?? NaN).toFixed(1)} | ${r.wordcountLocal} ` +
        `|`,
    );
  }
  return lines.join('\n');
}

/** Per policy, the mean of its runs or seeds (node-local WordCount maps summed over them). */
function meanRows(rows: readonly Row[], where: 'sim' | 'real'): Row[] {
  return POLICIES.map((policy) => {
    const runs = rows.filter((r) => r.policy === policy);
    const mean = (get: (r: Row) => number) => runs.reduce((s, r) => s + get(r), 0) / runs.length;
    const local = runs.map((r) => r.wordcountLocal.split('/').map(Number));
    const apps = [...new Set(runs.flatMap((r) => Object.keys(r.jctS)))];
    return {
      where,
      policy: `${policy} (mean of ${runs.length})`,
      remoteBytes: mean((r) => r.remoteBytes),
      offRackBytes: mean((r) => r.offRackBytes),
      extraCopyBytes: mean((r) => r.extraCopyBytes),
      placedBytes: mean((r) => r.placedBytes),
      completedBytes: mean((r) => r.completedBytes),
      networkBytes: mean((r) => r.networkBytes),
      rereadBytes: mean((r) => r.rereadBytes),
      killed: mean((r) => r.killed),
      killedSlotSeconds: mean((r) => r.killedSlotSeconds),
      jctS: Object.fromEntries(apps.map((app) => [app, mean((r) => r.jctS[app] ?? Number.NaN)])),
      wordcountLocal: `${local.reduce((s, [l]) => s + l!, 0)}/${local.reduce((s, [, n]) => s + n!, 0)}`,
    };
  });
}

/**
 * Improved FAIR minus FAIR, pair by pair (run k of one against run k of the other, made back to
 * back): the mean difference, its standard error, and in how many pairs improved FAIR was lower.
 * A mean difference within about two standard errors of 0 is not told apart from noise.
 */
function pairedLine(
  rows: readonly Row[],
  label: string,
  get: (r: Row) => number,
  unit: string,
  digits: number,
): string {
  const of = (policy: string) =>
    rows.filter((r) => r.policy === policy).sort((a, b) => (a.repeat ?? 0) - (b.repeat ?? 0));
  const fair = of('fair');
  const diffs = of('improved-fair').map((r, k) => get(r) - get(fair[k]!));
  const { mean, standardError: se, n } = meanWithStandardError(diffs);
  return (
    `${label}: ${mean >= 0 ? '+' : ''}${mean.toFixed(digits)} ${unit} ` +
    `(standard error ${se.toFixed(digits)}), lower ` +
    `in ${diffs.filter((x) => x < 0).length} of ${n}`
  );
}

function pairedDifferences(rows: readonly Row[], unit: 'GiB' | 'MiB', pairs: string): string {
  const div = unit === 'GiB' ? 2 ** 30 : 2 ** 20;
  return (
    `Improved FAIR minus FAIR, ${pairs}: ` +
    `${pairedLine(rows, 'data moved', (r) => r.networkBytes / div, unit, 2)}; ` +
    `${pairedLine(rows, 'WordCount JCT', (r) => r.jctS.wordcount ?? Number.NaN, 's', 1)}.`
  );
}

function verdict(rows: readonly Row[]): string {
  const fair = rows.find((r) => r.policy.startsWith('fair'))!;
  const improved = rows.find((r) => r.policy.startsWith('improved-fair'))!;
  const less = improved.networkBytes < fair.networkBytes;
  const sooner = improved.jctS.wordcount! <= fair.jctS.wordcount!;
  return (
    `${less && sooner ? 'PASS' : 'FAIL'}: improved FAIR ` +
    `moved ${Math.abs((100 * (improved.networkBytes - fair.networkBytes)) / Math.max(1, fair.networkBytes)).toFixed(0)}% ` +
    (`${less ? 'less' : 'more'} data than FAIR ` +
      `(${less ? 'target met' : 'target missed'}) and finished ` +
      `WordCount in ${improved.jctS.wordcount!.toFixed(1)} s against `) +
    `${fair.jctS.wordcount!.toFixed(1)} s (${sooner ? 'no later: target met' : 'later: target missed'}).`
  );
}

async function main(): Promise<void> {
  const workload: Workload = namedWorkload('improved-fair');
  const simCluster = clusterPreset('improved-fair-12');
  const simOptions = { minShareTimeoutMs: 5000, fairShareTimeoutMs: 10_000 };
  // One seed's outcome turns on a few kills landing a block this side or that of a rack: the
  // verdict is on the mean over seeds (the workload's task-time jitter and the simulator's noise).
  const simRows: Row[] = [];
  for (let seed = 1; seed <= args['sim-seeds']; seed++) {
    log(
      `simulator seed ${seed}/${args['sim-seeds']}: improved-fair ` +
        `workload on improved-fair-12 under fair and improved-fair`,
    );
    const sim = comparePolicies({
      workload: namedWorkload('improved-fair', { seed }),
      cluster: simCluster,
      policies: [...POLICIES],
      policyOptions: { fair: simOptions, 'improved-fair': simOptions },
      keepRuns: true,
      seed,
    });
    for (const p of sim.policies) simRows.push({ ...rowOf('sim', p.policy, p.run!), repeat: seed });
  }
  const simMeans = meanRows(simRows, 'sim');

  const realRows: Row[] = [];
  const realRuns: RunRecord[] = [];
  const real = realCluster({
    workers: args.workers,
    racks: args.racks,
    mapSlots: 2,
    reduceSlots: 1,
    memoryMb: 2048,
    diskMBps: args['disk-mbps'],
    bytesPerMap: parseSize(args['bytes-per-map']),
    timeScale: args['time-scale'],
    maxMapsPerJob: 64,
  });
  if (args.real) {
    const scaled = scaleWorkload(workload, simCluster, real);
    const realOptions = {
      minShareTimeoutMs: args['t-min-ms'],
      fairShareTimeoutMs: args['t-fair-ms'],
      nodeLocalDelayMs: args['delay-ms'],
      rackLocalDelayMs: args['delay-ms'],
    };
    for (let repeat = 1; repeat <= args.repeats; repeat++)
      for (const policy of POLICIES) {
        const dir = await mkdtemp(join(os.tmpdir(), `minimr-bench-fair-${policy}-`));
        try {
          log(
            `real ${repeat}/${args.repeats}: ${policy} on ${real.name} ` +
              `(${args['bytes-per-map']} per map, maps x ${scaled.mapScale})`,
          );
          const result = await runWorkloadOnCluster({
            workload: scaled.workload,
            cluster: real,
            policy,
            policyOptions: realOptions,
            dataDir: dir,
            bytesPerMap: parseSize(args['bytes-per-map']),
            mapScale: scaled.mapScale,
            timeScale: args['time-scale'],
            privateInputs: scaled.privateInputs,
            grepPattern: args['grep-pattern'],
            measureAlone: false,
            onProgress: (m) => log(`real ${policy}: ${m}`),
          });
          const failed = result.run.jobs.filter((j) => j.state !== 'succeeded');
          if (failed.length > 0)
            throw new Error(`real ${policy}: jobs did not succeed: ${failed.map((j) => j.id).join(', ')}`);
          realRows.push({ ...rowOf('real', policy, result.run), repeat });
          realRuns.push(result.run);
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      }
  }

  const realMeans = realRows.length > 0 ? meanRows(realRows, 'real') : [];
  const md = [
    '# FAIR vs improved FAIR: TeraSort + GrepCount fill the cluster, then WordCount arrives',
    '',
    `${new Date().toISOString()}; Node ${process.version}; ${os.cpus().length} CPUs; load ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}.`,
    '',
    `## Simulator: ${simCluster.name} (12 workers, 3 racks of 4, 8 ` +
      `map slots each), 10 GB per job, T_min 5 s, T_fair 10 s, seeds ` +
      `1-${args['sim-seeds']}`,
    '',
    table(
      [...simRows].sort((a, b) => a.policy.localeCompare(b.policy) || (a.repeat ?? 0) - (b.repeat ?? 0)),
      'GiB',
    ),
    '',
    'Means over the seeds:',
    '',
    table(simMeans, 'GiB'),
    '',
    verdict(simMeans),
    '',
    pairedDifferences(simRows, 'GiB', 'seed by seed'),
    '',
    ...(args.real
      ? [
          `## Real local cluster: ${real.name}, ${args['bytes-per-map']} ` +
            `per map, arrivals x ${args['time-scale']}, ` +
            `T_min ${args['t-min-ms']} ms, T_fair ${args['t-fair-ms']} ms, ` +
            `delays ${args['delay-ms']} ms, disk rate ${args['disk-mbps']} ` +
            `MB/s reported`,
          '',
          `Each policy ran ${args.repeats} time(s), interleaved (fair, ` +
            `improved-fair, fair, ...), on a fresh cluster each time; the ` +
            `verdict compares the means. One run moves a few 8 MiB blocks ` +
            `more or fewer by timing alone, so single runs disagree.`,
          '',
          table(
            [...realRows].sort((a, b) => a.policy.localeCompare(b.policy) || (a.repeat ?? 0) - (b.repeat ?? 0)),
            'MiB',
          ),
          '',
          'Means:',
          '',
          table(realMeans, 'MiB'),
          '',
          verdict(realMeans),
          '',
          pairedDifferences(realRows, 'MiB', 'run by run (each pair made back to back)'),
          '',
          `WordCount JCT, median of the runs (less sensitive to a load ` +
            `spike on this shared machine than the ` +
            `mean): ${POLICIES.map((p) => `${p} ${median(realRows.filter((r) => r.policy === p).map((r) => r.jctS.wordcount ?? Number.NaN)).toFixed(1)} s`).join(', ')}.`,
          '',
        ]
      : []),
    'Data moved = map input read from a replica on another node + ' +
      'extra copies (replicate decisions for inputs already fully ' +
      "replicated). WordCount's private data set arrives with it: one " +
      'replica per block is written, the second is owed; improved FAIR ' +
      'places owed replicas on nodes its kills free, and those it did ' +
      "not place are written on the holder's rack when the placement " +
      'window (T_min + T_fair) closes. The upload writes two replicas ' +
      'per block under both policies, so owed replicas are shown ' +
      'apart, not counted as data moved. Re-read = input the killed ' +
      'attempts had read (read again by their re-runs).',
    '',
  ].join('\n');
  await mkdir(OUT, { recursive: true });
  await writeFile(
    join(OUT, 'fair.json'),
    `${JSON.stringify({ args, sim: simRows, simMeans, real: realRows, realMeans }, null, 2)}\n`,
  );
  if (realRuns.length > 0) await writeFile(join(OUT, 'runs-real.json'), `${JSON.stringify(realRuns)}\n`);
  await writeFile(join(OUT, 'fair.md'), md);
  const groups = [
    ...simMeans.map((r) => ({ ...r, label: `sim ${r.policy}`, value: r.networkBytes / 2 ** 30 })),
    ...realMeans.map((r) => ({ ...r, label: `real ${r.policy}`, value: r.networkBytes / 2 ** 20 })),
  ];
  for (const [name, text] of barChartFiles('data-moved', {
    title: 'Data moved: FAIR vs improved FAIR (sim GiB, real MiB)',
    categories: groups.map((g) => g.label),
    series: [{ name: 'data moved', values: groups.map((g) => g.value) }],
    yLabel: 'sim GiB / real MiB',
  }))
    await writeFile(join(OUT, name), text);
  process.stdout.write(`${md}\nwritten to ${OUT}/fair.{json,md} and data-moved.{svg,csv}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:fair failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
