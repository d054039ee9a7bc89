/**
 * minimr's simulator beside DSS, the YARN-ME paper's own simulator (github.com/epfl-labos/DSS),
 * on the paper's 12 uniform configurations (issue 36): T 200/400 tasks per job, M 2/6/10 GB per
 * task, D 200/500 s per task; 100 jobs arriving over 1,000 s; 100 nodes x 16 cores x 10,000 MB;
 * heartbeats of 1 s; a 3x STEP penalty; reservations on.
 *
 * Each configuration's trace is DSS's own file: src/workloads/dss-traces.ts draws it as DSS's
 * generator (`trace-generator.py 100 0 1000 unif 1 T unif 10 M*10 unif 1 D unif SEED`) and writes
 * its very text, and minimr reads it back as `minimr sim --workload FILE --penalty step:3
 * --cluster TOPO --node-memory-mb 10000 --node-cores 16 --heartbeat-ms 1000` does. minimr runs it
 * under the option sets of MINIMR_RUNS (yarn and yarn-me as DSS allocates, and yarn without
 * ApplicationMasters); DSS under REGULAR, PEEK (STEP 3) and REGULAR with AMs of 0 MB x 0 cores,
 * all with `-r`. Per configuration: the mean job duration of each run, the YARN-ME/YARN ratio on
 * both sides, and the per-job agreement (the share of DSS's jobs that minimr's matching run
 * finished within 10% of DSS's duration). A run that did not finish every job (a deadlock: minimr
 * reports it in its run record, DSS stops without writing its statistics) has no mean: "deadlock".
 *
 * DSS's figures come from one of:
 * - `--dss DIR --python CMD`: run DSS (a runnable checkout; DSS is Python 2, CMD may be a Python 3
 *   that runs a port) on the same trace files, `--dss-jobs` at a time, in `--dss-work`
 *   (bench-results/dss/dss-runs), one directory per configuration and run;
 * - `--dss-runs DIR`: DSS's outputs already in that layout (DIR/<configuration>.trace and
 *   DIR/<configuration>/{regular,peek,regular-am0}/job_stats.out), e.g. from an earlier --dss;
 * - `--dss-results FILE`: the figures file either of those writes (bench-results/dss/dss-results.json),
 *   so committed figures can be printed beside a new minimr run. Traces are checked by SHA-256.
 *
 * Run: npm run bench:dss [-- --dss ../DSS --python python2 --dss-jobs 2 | --dss-results FILE]
 *   [--only T200_M6_D200 ...] [--seed 1] [--skip-minimr]
 * Writes bench-results/dss/{dss.json, dss.md} and, with --dss or --dss-runs, dss-results.json.
 * minimr's side takes a few minutes; DSS's PEEK takes minutes per configuration on CPython.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import yargs from 'yargs';
import { comparePolicies, type PolicyFactory } from '../src/experiments/index.js';
import { perJobAgreement } from '../src/metrics/index.js';
import { createPolicy, type PolicyOptions } from '../src/scheduler/index.js';
import { dssUniformConfiguration, dssUniformTrace, loadCluster, loadWorkload } from '../src/workloads/index.js';

const OUT = join('bench-results', 'dss');
const NODES = 100;
const NODE_MEMORY_MB = 10_000;
const NODE_CORES = 16;
const HEARTBEAT_MS = 1000;
const TOLERANCE = 0.1;

type DssRunName = 'REGULAR' | 'PEEK' | 'REGULAR-AM0';

/** DSS's runs: the directory each writes to, and dss.py's arguments after the node settings. */
const DSS_RUNS: Readonly<Record<DssRunName, { readonly dir: string; readonly args: readonly string[] }>> = {
  REGULAR: { dir: 'regular', args: ['1000', '1', 'REGULAR'] },
  PEEK: { dir: 'peek', args: ['1000', '1', 'PEEK', 'STEP', '3'] },
  'REGULAR-AM0': { dir: 'regular-am0', args: ['0', '0', 'REGULAR'] },
};

/**
 * minimr's runs and the DSS run each is put beside. `compat: 'dss'` allocates as DSS does (AMs,
 * one container per heartbeat, launch through AM heartbeats, unguarded reservations, PEEK's
 * admission for yarn-me); `amMb: 0` is yarn as minimr ran it before AMs, beside DSS with AMs of 0,
 * and so is yarn as DSS allocates without AMs. The summary table shows the first three.
 */
const MINIMR_RUNS: ReadonlyArray<{
  readonly name: string;
  readonly policy: 'yarn' | 'yarn-me';
  readonly options: PolicyOptions;
  readonly dss: DssRunName;
}> = [
  { name: 'yarn (compat dss)', policy: 'yarn', options: { compat: 'dss' }, dss: 'REGULAR' },
  { name: 'yarn-me (compat dss)', policy: 'yarn-me', options: { compat: 'dss' }, dss: 'PEEK' },
  // As minimr ran yarn before AMs: no AM, and no reservable-nodes guard.
  { name: 'yarn (amMb 0)', policy: 'yarn', options: { amMb: 0, reservableNodes: 1 }, dss: 'REGULAR-AM0' },
  { name: 'yarn (compat dss, amMb 0)', policy: 'yarn', options: { compat: 'dss', amMb: 0 }, dss: 'REGULAR-AM0' },
];

interface Configuration {
  readonly name: string;
  readonly tasks: number;
  readonly memoryGb: number;
  readonly durationS: number;
}

const CONFIGURATIONS: readonly Configuration[] = [200, 400].flatMap((tasks) =>
  [2, 6, 10].flatMap((memoryGb) =>
    [200, 500].map((durationS) => ({ name: `T${tasks}_M${memoryGb}_D${durationS}`, tasks, memoryGb, durationS })),
  ),
);

/** One run's outcome: every job's duration (null: unfinished), its mean when all finished. */
interface RunFigures {
  readonly jobs: number;
  readonly finished: number;
  /** Mean job duration in seconds; null when a job did not finish. */
  readonly meanS: number | null;
  readonly deadlock: boolean;
  /** Why the run has no mean: DSS failing, or the jobs a deadlock left stuck. */
  readonly note?: string;
  readonly wallS: number;
  readonly durationsMs: Readonly<Record<string, number | null>>;
}

interface DssResults {
  readonly about: string;
  readonly generator: string;
  readonly seed: number;
  readonly command: string;
  readonly configurations: Readonly<
    Record<string, { readonly traceSha256: string; readonly runs: Partial<Record<DssRunName, RunFigures>> }>
  >;
}

const args = yargs(process.argv.slice(2))
  .option('seed', { type: 'number', default: 1, describe: "the trace generator's NumPy seed" })
  .option('only', { type: 'string', array: true, describe: 'configurations to run, e.g. T200_M6_D200' })
  .option('dss', { type: 'string', describe: 'a runnable DSS checkout: run DSS on the same traces' })
  .option('python', { type: 'string', default: 'python2', describe: 'the command that runs dss.py (with --dss)' })
  .option('dss-jobs', { type: 'number', default: 1, describe: 'DSS runs at a time (with --dss)' })
  .option('dss-work', { type: 'string', describe: "DSS's run directories (default bench-results/dss/dss-runs)" })
  .option('dss-runs', { type: 'string', describe: "read DSS's outputs from this directory instead of running it" })
  .option('dss-results', { type: 'string', describe: "read DSS's figures from this JSON file (a dss-results.json)" })
  .option('skip-minimr', { type: 'boolean', default: false, describe: "only gather DSS's figures" })
  .strict()
  .parseSync();

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

const mean = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0) / values.length;

function figures(durationsMs: Map<string, number | null>, wallS: number, deadlock: boolean, note?: string): RunFigures {
  const done = [...durationsMs.values()].filter((d): d is number => d !== null);
  const complete = done.length === durationsMs.size && durationsMs.size > 0 && !deadlock;
  return {
    jobs: durationsMs.size,
    finished: done.length,
    meanS: complete ? mean(done) / 1000 : null,
    deadlock: !complete && note === undefined ? true : deadlock,
    ...(note !== undefined ? { note } : {}),
    wallS,
    durationsMs: Object.fromEntries(durationsMs),
  };
}

/** The same 100-node topology file DSS's samples/topos/generate_topo.py writes. */
function topologyText(nodes: number): string {
  const list = Array.from({ length: nodes }, (_, i) => ({ node: `node${i + 1}` }));
  return `${JSON.stringify({ nodes: list, rack: 'default-rack' }, null, 4)}\n`;
}

/** DSS's job_stats.out (`job_0, start_ms=..., end_ms=..., duration_s=..., ...`) for the trace's jobs. */
function readDssRun(dir: string, jobIds: readonly string[]): RunFigures | undefined {
  const durations = new Map<string, number | null>(jobIds.map((id) => [id, null]));
  const done = existsSync(join(dir, 'done')) ? readFileSync(join(dir, 'done'), 'utf8') : '';
  const rc = /rc=(\d+)/.exec(done)?.[1];
  // DSS's own figure for its run (misc_stats.out's run_duration: Python 2's time.clock(), CPU seconds)
  // does not count time the machine gave to others; the wall time measured around it, if none.
  const misc = join(dir, 'misc_stats.out');
  const ownS = existsSync(misc)
    ? Number(readFileSync(misc, 'utf8').trim().split('\n').pop()?.split('\t')[0])
    : Number.NaN;
  const wallS = Number.isFinite(ownS) ? ownS : Number(/wall_s=([\d.]+)/.exec(done)?.[1] ?? Number.NaN);
  if (rc === undefined) {
    process.stderr.write(`${dir}: DSS has not finished this run (no 'done' file): left out\n`);
    return undefined;
  }
  const statsFile = join(dir, 'job_stats.out');
  const log = existsSync(join(dir, 'log')) ? readFileSync(join(dir, 'log'), 'utf8') : '';
  if (rc !== '0') return figures(durations, wallS, false, `DSS failed (exit ${rc}): ${log.trim().split('\n').pop()}`);
  if (existsSync(statsFile))
    for (const line of readFileSync(statsFile, 'utf8').split('\n')) {
      const m = /^(\S+), start_ms=(\d+), end_ms=(\d+),/.exec(line);
      if (m) durations.set(m[1]!, Number(m[3]) - Number(m[2]));
    }
  // DSS writes its statistics only when every job finished; a deadlocked run ends with an empty
  // event queue and "Reached queue end without receiving a FINISHED event." in its log.
  const deadlock = !existsSync(statsFile) || [...durations.values()].some((d) => d === null);
  return figures(durations, wallS, deadlock);
}

function runDss(dssDir: string, python: string, trace: string, topo: string, dir: string, run: DssRunName) {
  mkdirSync(dir, { recursive: true });
  const [cmd = 'python2', ...pre] = python.split(/\s+/).filter(Boolean);
  const argv = [
    ...pre,
    join(dssDir, 'dss.py'),
    '-r',
    trace,
    topo,
    String(NODE_MEMORY_MB),
    String(NODE_CORES),
    String(HEARTBEAT_MS),
    String(HEARTBEAT_MS),
    ...DSS_RUNS[run].args,
  ];
  const started = performance.now();
  return new Promise<void>((done, fail) => {
    const child = spawn(cmd, argv, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const log: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => log.push(b));
    child.stderr.on('data', (b: Buffer) => log.push(b));
    child.on('error', fail);
    child.on('close', (code) => {
      writeFileSync(join(dir, 'log'), Buffer.concat(log));
      writeFileSync(join(dir, 'command'), `${[cmd, ...argv].join(' ')}\n`);
      const wallS = (performance.now() - started) / 1000;
      writeFileSync(join(dir, 'done'), `rc=${code ?? 1} wall_s=${wallS.toFixed(3)}\n`);
      done();
    });
  });
}

async function pool<T>(items: readonly T[], width: number, each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(width, items.length)) }, async () => {
    while (next < items.length) await each(items[next++]!);
  });
  await Promise.all(lanes);
}

const GENERATOR = 'trace-generator.py 100 0 1000 unif 1 T unif 10 M*10 unif 1 D unif SEED';
const DSS_COMMAND =
  `dss.py -r TRACE TOPO ${NODE_MEMORY_MB} ${NODE_CORES} ${HEARTBEAT_MS} ${HEARTBEAT_MS} ` +
  '{1000 1 REGULAR | 1000 1 PEEK STEP 3 | 0 0 REGULAR}';

async function main(): Promise<void> {
  const configurations = CONFIGURATIONS.filter((c) => !args.only || args.only.includes(c.name));
  if (configurations.length === 0)
    throw new Error(`--only names no configuration of ${CONFIGURATIONS.map((c) => c.name)}`);
  const sources = [args.dss, args['dss-runs'], args['dss-results']].filter((s) => s !== undefined);
  if (sources.length > 1) throw new Error('give one of --dss, --dss-runs, --dss-results');
  mkdirSync(OUT, { recursive: true });
  const workDir = mkdtempSync(join(tmpdir(), 'minimr-bench-dss-'));
  try {
    const topo = join(workDir, 'topo_100.json');
    writeFileSync(topo, topologyText(NODES));
    const traces = new Map<string, { path: string; text: string; jobIds: string[] }>();
    for (const c of configurations) {
      const text = dssUniformTrace(dssUniformConfiguration(c.tasks, c.memoryGb, c.durationS, args.seed));
      const path = join(workDir, `${c.name}.json`);
      writeFileSync(path, text);
      const jobIds = [...text.matchAll(/"job\.id" : "([^"]+)"/g)].map((m) => m[1]!);
      traces.set(c.name, { path, text, jobIds });
    }

    // DSS's side.
    let dss: DssResults | undefined;
    if (args.dss !== undefined || args['dss-runs'] !== undefined) {
      const runsDir = resolve(args['dss-runs'] ?? args['dss-work'] ?? join(OUT, 'dss-runs'));
      if (args.dss !== undefined) {
        const dssDir = resolve(args.dss);
        const jobs: Array<{ c: Configuration; run: DssRunName }> = [];
        for (const c of configurations) {
          mkdirSync(runsDir, { recursive: true });
          writeFileSync(join(runsDir, `${c.name}.trace`), traces.get(c.name)!.text);
          for (const run of Object.keys(DSS_RUNS) as DssRunName[]) jobs.push({ c, run });
        }
        writeFileSync(join(runsDir, 'topo_100'), topologyText(NODES));
        await pool(jobs, args['dss-jobs'], async ({ c, run }) => {
          process.stderr.write(`DSS ${c.name} ${run}\n`);
          await runDss(
            dssDir,
            args.python,
            join(runsDir, `${c.name}.trace`),
            join(runsDir, 'topo_100'),
            join(runsDir, c.name, DSS_RUNS[run].dir),
            run,
          );
        });
      }
      const results: Record<string, DssResults['configurations'][string]> = {};
      for (const c of configurations) {
        const trace = traces.get(c.name)!;
        const onDisk = readFileSync(join(runsDir, `${c.name}.trace`), 'utf8');
        if (onDisk !== trace.text) throw new Error(`${runsDir}/${c.name}.trace is not the trace of seed ${args.seed}`);
        const runs: Partial<Record<DssRunName, RunFigures>> = {};
        for (const run of Object.keys(DSS_RUNS) as DssRunName[]) {
          const figures = readDssRun(join(runsDir, c.name, DSS_RUNS[run].dir), trace.jobIds);
          if (figures) runs[run] = figures;
        }
        results[c.name] = { traceSha256: sha256(trace.text), runs };
      }
      dss = {
        about: "DSS's mean and per-job durations (ms; null: unfinished) on the 12 uniform configurations",
        generator: GENERATOR,
        seed: args.seed,
        command: DSS_COMMAND,
        configurations: results,
      };
      writeFileSync(join(OUT, 'dss-results.json'), `${JSON.stringify(dss, null, 1)}\n`);
      process.stderr.write(`wrote ${join(OUT, 'dss-results.json')}\n`);
    } else if (args['dss-results'] !== undefined) {
      dss = JSON.parse(readFileSync(args['dss-results'], 'utf8')) as DssResults;
      for (const c of configurations) {
        const saved = dss.configurations[c.name];
        if (saved && saved.traceSha256 !== sha256(traces.get(c.name)!.text))
          throw new Error(`${args['dss-results']}: ${c.name} was run on another trace than seed ${args.seed}'s`);
      }
    }

    // minimr's side, as `minimr sim --workload FILE` runs it.
    const minimr: Record<string, Record<string, RunFigures>> = {};
    if (!args['skip-minimr']) {
      const cluster = await loadCluster(topo, { memoryMb: NODE_MEMORY_MB, vcores: NODE_CORES });
      for (const c of configurations) {
        const workload = await loadWorkload(traces.get(c.name)!.path, { penalty: 'step:3' });
        const factories: PolicyFactory[] = MINIMR_RUNS.map((r) => ({
          name: r.name,
          create: () => createPolicy(r.policy, r.options),
        }));
        const result = comparePolicies({
          workload,
          cluster,
          policies: factories,
          heartbeatMs: HEARTBEAT_MS,
          seed: args.seed,
          keepRuns: true,
          onProgress: (line) => process.stderr.write(`${c.name}: ${line}\n`),
        });
        minimr[c.name] = {};
        for (const p of result.policies) {
          const durations = new Map<string, number | null>(
            // minimr numbers a trace's jobs in submission order and keeps the trace's job id as the name.
            p.run!.jobs.map((j) => [
              j.name,
              j.state === 'succeeded' && j.finishMs !== null ? j.finishMs - j.submitMs : null,
            ]),
          );
          const stuck = p.run!.deadlock;
          const note = stuck
            ? `deadlock at ${(stuck.atMs / 1000).toFixed(0)} s: ${stuck.jobs.length} jobs stuck (${stuck.jobs[0]?.reason ?? ''})`
            : undefined;
          minimr[c.name]![p.policy] = {
            ...figures(durations, p.wallMs / 1000, stuck !== undefined),
            ...(note ? { note } : {}),
          };
        }
      }
    }

    const md = markdown(configurations, minimr, dss);
    writeFileSync(join(OUT, 'dss.md'), md);
    writeFileSync(
      join(OUT, 'dss.json'),
      `${JSON.stringify(
        {
          seed: args.seed,
          cluster: { nodes: NODES, memoryMb: NODE_MEMORY_MB, cores: NODE_CORES, heartbeatMs: HEARTBEAT_MS },
          generator: GENERATOR,
          minimrRuns: MINIMR_RUNS,
          configurations: configurations.map((c) => ({
            ...c,
            minimr: minimr[c.name] ?? null,
            dss: dss?.configurations[c.name]?.runs ?? null,
            agreement: Object.fromEntries(
              MINIMR_RUNS.map((r) => [
                r.name,
                agreementOf(minimr[c.name]?.[r.name], dss?.configurations[c.name]?.runs[r.dss]),
              ]),
            ),
          })),
        },
        null,
        1,
      )}\n`,
    );
    process.stdout.write(md);
    process.stderr.write(`wrote ${join(OUT, 'dss.md')} and dss.json\n`);
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** Share of DSS's jobs minimr's run finished within 10%; null when either run is missing or did not finish. */
function agreementOf(ours: RunFigures | undefined, theirs: RunFigures | undefined): number | null {
  if (!ours || !theirs || theirs.meanS === null) return null;
  const share = perJobAgreement(ours.durationsMs, theirs.durationsMs, TOLERANCE);
  return Number.isFinite(share) ? share : null;
}

const secs = (f: RunFigures | undefined): string =>
  !f ? '-' : f.meanS !== null ? f.meanS.toFixed(1) : f.deadlock ? `deadlock (${f.finished}/${f.jobs})` : 'failed';

const ratioOf = (a: RunFigures | undefined, b: RunFigures | undefined): number | null =>
  a?.meanS != null && b?.meanS != null ? a.meanS / b.meanS : null;

const fixed = (v: number | null, digits = 2): string => (v === null ? '-' : v.toFixed(digits));

function markdown(
  configurations: readonly Configuration[],
  minimr: Record<string, Record<string, RunFigures>>,
  dss: DssResults | undefined,
): string {
  const lines = [
    '# minimr beside DSS on the uniform configurations',
    '',
    `Traces: DSS's \`${GENERATOR}\` with seed ${dss?.seed ?? args.seed} (100 jobs over 1,000 s), ` +
      `regenerated byte for byte by minimr; ${NODES} nodes x ${NODE_CORES} cores x ${NODE_MEMORY_MB} MB, ` +
      `heartbeats ${HEARTBEAT_MS} ms, 3x STEP penalty, reservations on. DSS: \`${DSS_COMMAND}\`.`,
    '',
    "Mean job duration in seconds; agreement: the share of DSS's jobs the minimr run finished within " +
      `${TOLERANCE * 100}% of DSS's duration; ratio: YARN-ME/YARN (minimr) and PEEK/REGULAR (DSS).`,
    '',
    '| configuration | yarn | REGULAR | agree | yarn-me | PEEK | agree | ratio minimr | ratio DSS | yarn AM 0 | REGULAR AM 0 | agree |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const [yarn, yarnMe, yarnAm0] = MINIMR_RUNS.map((r) => r.name) as [string, string, string];
  for (const c of configurations) {
    const ours = minimr[c.name] ?? {};
    const theirs = dss?.configurations[c.name]?.runs ?? {};
    const agree = (name: string, run: DssRunName): string => {
      const a = agreementOf(ours[name], theirs[run]);
      return a === null ? '-' : `${(a * 100).toFixed(0)}%`;
    };
    lines.push(
      `| ${[
        c.name,
        secs(ours[yarn]),
        secs(theirs.REGULAR),
        agree(yarn, 'REGULAR'),
        secs(ours[yarnMe]),
        secs(theirs.PEEK),
        agree(yarnMe, 'PEEK'),
        fixed(ratioOf(ours[yarnMe], ours[yarn])),
        fixed(ratioOf(theirs.PEEK, theirs.REGULAR)),
        secs(ours[yarnAm0]),
        secs(theirs['REGULAR-AM0']),
        agree(yarnAm0, 'REGULAR-AM0'),
      ].join(' | ')} |`,
    );
  }
  lines.push(
    '',
    '## Per configuration',
    '',
    "DSS run s: DSS's own run_duration (misc_stats.out: CPU seconds, Python 2's time.clock()), else the wall time around it.",
    '',
  );
  for (const c of configurations) {
    const ours = minimr[c.name] ?? {};
    const theirs = dss?.configurations[c.name]?.runs ?? {};
    lines.push(
      `### ${c.name}`,
      '',
      '| minimr run | DSS run | minimr mean s | DSS mean s | minimr / DSS | jobs within 10% | minimr wall s | DSS run s |',
      '|---|---|---|---|---|---|---|---|',
    );
    for (const r of MINIMR_RUNS) {
      const a = agreementOf(ours[r.name], theirs[r.dss]);
      lines.push(
        `| ${[
          r.name,
          r.dss === 'PEEK' ? 'PEEK STEP 3' : r.dss === 'REGULAR-AM0' ? 'REGULAR, AM 0' : 'REGULAR',
          secs(ours[r.name]),
          secs(theirs[r.dss]),
          fixed(ratioOf(ours[r.name], theirs[r.dss]), 3),
          a === null ? '-' : `${(a * 100).toFixed(0)}%`,
          fixed(ours[r.name]?.wallS ?? null, 1),
          fixed(theirs[r.dss]?.wallS ?? null, 1),
        ].join(' | ')} |`,
      );
    }
    const rm = ratioOf(ours[yarnMe], ours[yarn]);
    const rd = ratioOf(theirs.PEEK, theirs.REGULAR);
    lines.push(
      `| YARN-ME / YARN | PEEK / REGULAR | ${fixed(rm, 3)} | ${fixed(rd, 3)} | ` +
        `${rm !== null && rd !== null ? `diff ${(rm - rd).toFixed(3)}` : '-'} | | | |`,
    );
    const notes = [...Object.entries(ours), ...Object.entries(theirs)].filter(([, f]) => f?.note);
    for (const [name, f] of notes) lines.push('', `- ${name}: ${f!.note}`);
    lines.push('');
  }
  return `${lines.join('\n')}\n`;
}

await main().catch((err: unknown) => {
  process.stderr.write(`bench:dss: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
