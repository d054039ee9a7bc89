import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JobClient, MrClusterRow } from '../../src/runtime/index.js';
import type { FsckReport } from '../../src/storage/index.js';
import { cliEnv, runMinimr, type CliResult } from '../helpers/cli.js';
import {
  appModule,
  isCode,
  readAll,
  readOutput,
  startTestCluster,
  waitFor,
  type TestCluster,
} from '../helpers/cluster.js';

/** The CLI against a test cluster, with its secret (and as its admin: the OS user who started it). */
function minimr(args: string[], cluster: { url: string; jobTracker: { secretFile: string } }): Promise<CliResult> {
  return runMinimr(args, {
    env: cliEnv({
      MINIMR_JOBTRACKER: cluster.url,
      ...(cluster.jobTracker.secretFile ? { MINIMR_SECRET_FILE: cluster.jobTracker.secretFile } : {}),
    }),
  });
}

/** Plain lines, every one with a "w" (the pattern the map-only job keeps) and every third with a "q". */
function linesText(count: number): string {
  const lines: string[] = [];
  for (let i = 0; i < count; i++)
    lines.push(`line ${i} w${(i * 7919) % 1000} ${i % 3 === 0 ? 'q ' : ''}${'x'.repeat(20 + (i % 40))}`);
  return `${lines.join('\n')}\n`;
}

const grepReference = (text: string, pattern: string): string =>
  text
    .split('\n')
    .filter((l) => l !== '' && l.includes(pattern))
    .map((l) => `${l}\n`)
    .join('');

function row(listing: { clusters: readonly MrClusterRow[] }, name: string): MrClusterRow | undefined {
  return listing.clusters.find((c) => c.name === name);
}

/** Each block's live replicas, by file, from fsck. */
function replicasByBlock(report: FsckReport): Map<string, { path: string; replicas: readonly string[] }> {
  const out = new Map<string, { path: string; replicas: readonly string[] }>();
  for (const f of report.files) for (const b of f.blocks) out.set(b.blockId, { path: f.path, replicas: b.replicas });
  return out;
}

const mapIndex = (taskId: string): number => Number(/_m_(\d+)$/.exec(taskId)![1]);
const partOf = (index: number): string => `part-m-${String(index).padStart(5, '0')}`;

describe('MR-clusters on real workers (FAWKES): placement by node kind, DP drains, no block lost', () => {
  let t: TestCluster;
  let client: JobClient;
  const text = linesText(40_000); // about 2.6 MB: about 40 blocks of 64 KiB
  const written = new Map<string, string>(); // part file of job 1 -> worker that wrote it

  before(async () => {
    t = await startTestCluster({
      workers: 5,
      replication: 2,
      mapSlots: 2,
      reduceSlots: 1,
      // A worker stopped on purpose (below) must not be declared lost before it is moved.
      workerTimeoutMs: 20_000,
      policy: 'fawkes',
      policyOptions: {
        weighting: 'td',
        intervalMs: 500,
        sampleMs: 100,
        grow: 'TC',
        shrink: 'DP',
        deactivateIdle: false,
      },
    });
    client = t.cluster.client;
    await t.fs.put(Buffer.from(text), '/data/lines.txt');
  });
  after(async () => {
    await t?.stop();
  });

  it('activation copies the input onto the core nodes only', async () => {
    const r = await client.mrcActivate('A', 2, '/data/lines.txt');
    assert.equal(r.name, 'A');
    const a = await waitFor('A active', async () => {
      const c = row(await client.mrcList(), 'A');
      return c?.state === 'active' ? c : undefined;
    });
    assert.equal(a.nodes.core.length, 2);
    const report = await client.fsck('/mrc/A/input');
    assert.equal(report.files.length, 1);
    assert.equal(report.files[0]!.length, Buffer.byteLength(text));
    assert.ok(report.totalBlocks > 20);
    for (const f of report.files)
      for (const b of f.blocks)
        assert.deepEqual([...b.replicas].sort(), [...a.nodes.core].sort(), `${b.blockId} on ${b.replicas.join(',')}`);
    assert.equal((await readAll(t.fs.cat('/mrc/A/input/lines.txt'))).toString(), text);
  });

  it(
    'the cluster grows with transient-core nodes; each output block ' +
      'is on its writer when it stores, and on core nodes',
    async () => {
      const jobId = await client.submit(appModule('grep-lines'), {
        input: ['/mrc/A/input'],
        output: '/mrc/A/out1',
        params: { pattern: 'w' },
        mrCluster: 'A',
      });
      const grown = await waitFor('A grown with transient-core nodes', async () => {
        const c = row(await client.mrcList(), 'A');
        return c && c.nodes['transient-core'].length > 0 ? c : undefined;
      });
      const status = await client.waitForCompletion(jobId);
      assert.equal(status.state, 'succeeded');
      assert.equal((await readOutput(t.fs, '/mrc/A/out1')).toString(), grepReference(text, 'w'));
      const a = row(await client.mrcList(), 'A')!;
      assert.equal(a.nodes.transient.length, 0, 'grow TC adds no transient nodes');
      assert.ok(grown.nodes['transient-core'].length >= 1);
      const cores = new Set(a.nodes.core);
      const tcs = new Set(a.nodes['transient-core']);
      for (const at of await client.attempts(jobId))
        if (at.state === 'succeeded') written.set(partOf(mapIndex(at.taskId)), at.workerId);
      const report = await client.fsck('/mrc/A/out1');
      let onTransientCore = 0;
      for (const f of report.files) {
        const writer = written.get(f.path.split('/').pop()!);
        if (!writer) continue; // _SUCCESS
        for (const b of f.blocks) {
          assert.equal(b.replicas.length, 2);
          if (tcs.has(writer)) {
            onTransientCore++;
            assert.ok(b.replicas.includes(writer), `${f.path}: its writer ${writer} (transient-core) holds it`);
            for (const r of b.replicas)
              assert.ok(r === writer || cores.has(r), `${f.path}: replica on ${r}, neither its writer nor a core node`);
          } else {
            for (const r of b.replicas) assert.ok(cores.has(r), `${f.path} written by core ${writer}: replica on ${r}`);
          }
        }
      }
      assert.ok(onTransientCore > 0, 'some output was written by a transient-core node');
    },
  );

  it(
    'a new cluster gets its minimum share by delayed preemption: ' +
      "the leaving nodes' blocks are copied first, none lost",
    async () => {
      const before = await client.fsck('/mrc/A');
      const listed = await minimr(['mrc', 'activate', 'B', '--min-nodes', '2', '--wait'], t.cluster);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /MR-cluster B is active/);
      const l = await client.mrcList();
      const a = row(l, 'A')!;
      const b = row(l, 'B')!;
      assert.equal(b.nodes.core.length, 2);
      const aNodes = new Set([...a.nodes.core, ...a.nodes['transient-core']]);
      for (const moved of b.nodes.core) assert.ok(!aNodes.has(moved));
      const after = await client.fsck('/mrc/A');
      assert.equal(after.missing.length, 0);
      assert.equal(after.underReplicated.length, 0);
      assert.deepEqual(
        [...replicasByBlock(after).keys()].sort(),
        [...replicasByBlock(before).keys()].sort(),
        'the same blocks',
      );
      // Blocks of the nodes that left now live on A's remaining nodes only.
      let moved = 0;
      const was = replicasByBlock(before);
      for (const [id, now] of replicasByBlock(after)) {
        for (const r of now.replicas) assert.ok(aNodes.has(r), `${now.path}: ${id} on ${r}, which is not in A`);
        if (was.get(id)!.replicas.some((r) => b.nodes.core.includes(r))) moved++;
      }
      assert.ok(moved > 0, 'the drained nodes held blocks');
      assert.equal((await readOutput(t.fs, '/mrc/A/out1')).toString(), grepReference(text, 'w'));
      const shown = await minimr(['mrc', 'list'], t.cluster);
      assert.equal(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, /^NAME\s+STATE\s+MIN\s+CORE\s+TC\s+TR/m);
      assert.match(shown.stdout, /^A\s+active\s+2\s+2\s+\d+\s+0/m);
      assert.match(shown.stdout, /^B\s+active\s+2\s+2\s+0\s+0/m);
    },
  );

  it(
    'a worker SIGKILLed while it drains loses no block that had ' +
      'another replica, and fsck names those that had none',
    async () => {
      const a = row(await client.mrcList(), 'A')!;
      const [tc] = a.nodes['transient-core'];
      assert.ok(tc, 'A kept a transient-core node');
      // Output with one replica (as Sort writes it): what its transient-core writer holds is its only copy.
      const jobId = await client.submit(appModule('grep-lines'), {
        input: ['/mrc/A/input'],
        output: '/mrc/A/out2',
        params: { pattern: 'q' },
        mrCluster: 'A',
        conf: { 'job.outputReplication': 1 },
      });
      assert.equal((await client.waitForCompletion(jobId)).state, 'succeeded');
      const beforeKill = replicasByBlock(await client.fsck('/mrc/A'));
      const onlyOnTc = [...beforeKill]
        .filter(([, b]) => b.replicas.length === 1 && b.replicas[0] === tc)
        .map(([id]) => id)
        .sort();
      assert.ok(onlyOnTc.length > 0, `${tc} holds the only replica of some out2 blocks`);
      // Stopped, it takes the copy requests of its drain but makes none; then it dies mid-drain.
      const index = t.cluster.workers.findIndex((w) => w.workerId === tc);
      const proc = t.cluster.workers[index]!.process;
      proc.kill('SIGSTOP');
      try {
        const r = await client.mrcActivate('C', 1);
        assert.ok(r.state === 'activating' || r.state === 'active');
        await waitFor(`${tc} draining out of A`, async () =>
          row(await client.mrcList(), 'A')?.leaving.some((x) => x.workerId === tc) ? true : undefined,
        );
      } finally {
        await t.cluster.killWorker(index);
      }
      const report = await waitFor('the lost worker noticed', async () => {
        const r = await client.fsck('/mrc/A');
        return r.liveDatanodes === 4 ? r : undefined;
      });
      assert.deepEqual(
        report.missing.map((m) => m.blockId).sort(),
        onlyOnTc,
        'missing: exactly the blocks whose only replica was on the killed worker',
      );
      for (const [id, b] of beforeKill) {
        if (onlyOnTc.includes(id)) continue;
        const now = replicasByBlock(report).get(id)!;
        assert.ok(now.replicas.length >= 1, `${b.path}: ${id} had another replica and still has one`);
      }
      assert.equal((await readOutput(t.fs, '/mrc/A/out1')).toString(), grepReference(text, 'w'));
      const fsck = await minimr(['fs', 'fsck', '/mrc/A'], t.cluster);
      assert.equal(fsck.code, 1, 'fsck exits 1 with missing blocks');
      assert.match(fsck.stdout, /Status: CORRUPT/);
      assert.match(fsck.stdout, new RegExp(`Missing blocks:\\s+${onlyOnTc.length}\\b`));
      for (const id of onlyOnTc) assert.match(fsck.stdout, new RegExp(`MISSING block ${id}\\b`));
      const healthy = await minimr(['fs', 'fsck', '/data'], t.cluster);
      assert.equal(healthy.code, 0, healthy.stdout);
      assert.match(healthy.stdout, /Status: HEALTHY/);
      assert.match(healthy.stdout, /Missing blocks:\s+0\b/);
    },
  );

  it('bad MR-cluster requests and submissions get clear errors', async () => {
    const again = await minimr(['mrc', 'activate', 'A', '--min-nodes', '1'], t.cluster);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /minimr: EBADCONF: MR-cluster "A" is already active/);
    const zero = await minimr(['mrc', 'activate', 'Z', '--min-nodes', '0'], t.cluster);
    assert.equal(zero.code, 1);
    assert.match(zero.stderr, /minimr: EBADCONF: .*--min-nodes must be a whole number of nodes >= 1, got 0/);
    const unknown = await minimr(
      [
        'submit',
        appModule('grep-lines'),
        '--mr-cluster',
        'nope',
        '--input',
        '/mrc/nope/in',
        '--output',
        '/mrc/nope/out',
        '--param',
        'pattern=w',
      ],
      t.cluster,
    );
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /minimr: ENOMRCLUSTER: MR-cluster "nope" is not active/);
    await assert.rejects(
      client.submit(appModule('grep-lines'), {
        input: ['/data/lines.txt'],
        output: '/mrc/A/out3',
        params: { pattern: 'w' },
        mrCluster: 'A',
      }),
      isCode('EBADJOB', /under \/mrc\/A\//),
    );
    await assert.rejects(
      client.submit(appModule('grep-lines'), {
        input: ['/data/lines.txt'],
        output: '/mrc/A/out3',
        params: { pattern: 'w' },
      }),
      isCode('EBADJOB', /--mr-cluster A/),
    );
    await assert.rejects(t.fs.put(Buffer.from('x\n'), '/mrc/nope/file'), isCode('ENOMRCLUSTER', /activate it first/));
    const big = await minimr(['mrc', 'activate', 'D', '--min-nodes', '3'], t.cluster);
    assert.equal(big.code, 0, big.stderr);
    assert.match(
      big.stdout,
      /MR-cluster D waits in the queue: its minimum share of 3 nodes plus the 5 the admitted clusters keep exceeds the pool of 4 live workers/,
    );
    const busy = await minimr(['mrc', 'deactivate', 'D'], t.cluster);
    assert.equal(busy.code, 1);
    assert.match(busy.stderr, /EBADCONF: cannot deactivate MR-cluster D: .*queued/);
  });

  it('deactivation saves the namespace outside the cluster, then its nodes return to the pool', async () => {
    await t.fs.put(Buffer.from('kept\n'), '/mrc/B/notes.txt');
    const bNodes = row(await client.mrcList(), 'B')!.nodes.core;
    const out = await minimr(['mrc', 'deactivate', 'B'], t.cluster);
    assert.equal(out.code, 0, out.stderr);
    await waitFor('B released', async () => (row(await client.mrcList(), 'B') ? undefined : true));
    assert.equal((await readAll(t.fs.cat('/mrc-saved/B/notes.txt'))).toString(), 'kept\n');
    await assert.rejects(t.fs.stat('/mrc/B'), isCode('ENOENT'));
    const l = await client.mrcList();
    for (const id of bNodes) assert.ok(!l.clusters.some((c) => c.nodes.core.includes(id) && c.name === 'B'));
    await assert.rejects(
      client.submit(appModule('grep-lines'), {
        input: ['/mrc/B/in'],
        output: '/mrc/B/out',
        params: { pattern: 'w' },
        mrCluster: 'B',
      }),
      isCode('ENOMRCLUSTER'),
    );
    await assert.rejects(client.mrcDeactivate('B'), isCode('ENOMRCLUSTER'));
  });
});

describe('MR-cluster settings', () => {
  it('an unknown FAWKES weighting is EBADCONF before any cluster starts', async () => {
    const r = await minimr(
      ['local', '--workers', '1', '--policy', 'fawkes', '--policy-options', '{"weighting":"xx"}'],
      { url: 'ws://127.0.0.1:1', jobTracker: { secretFile: '' } },
    );
    assert.equal(r.code, 1);
    // The one option parser's wording (scheduler/options.ts), naming the policy, the option and the choices.
    assert.match(
      r.stderr,
      /minimr: EBADCONF: scheduler policy 'fawkes': option 'weighting' must be one of "none", "eq", "jd", "dd", "td", "pu", "du", "ru", "js", "jt", "tt" \(any case\), got "xx"/,
    );
  });
});
