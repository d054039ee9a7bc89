/**
 * The books' MR-cluster rules (FAWKES), driven by posted events: requests and admission with
 * minimum shares and the global FIFO queue, node kinds in the snapshot, where output blocks go,
 * the shrink rules (instant and delayed preemption, the removal order, the minimum share, never
 * the last replica), deactivation. Every expectation is worked out by hand in the comments.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Books, type Effect, type JobRecord } from '../../src/books/index.js';
import type { Decision } from '../../src/scheduler/index.js';
import { MinimrError } from '../../src/errors.js';
import { launch, TICK, workerShape } from '../helpers/books.js';

const MiB = 1024 * 1024;

/** Six free workers: w1..w3 on rack r1, w4..w6 on rack r2. */
function pool(options: ConstructorParameters<typeof Books>[0] = {}): Books {
  const books = new Books({ freeze: true, ...options });
  for (const [id, rack] of [
    ['w1', 'r1'],
    ['w2', 'r1'],
    ['w3', 'r1'],
    ['w4', 'r2'],
    ['w5', 'r2'],
    ['w6', 'r2'],
  ] as const) {
    books.workerJoined(workerShape(id, rack), undefined, 0);
  }
  return books;
}

function submit(books: Books, id: string, cluster: string, maps: number, reduces: number, now = 0): JobRecord {
  return books.submit(
    {
      id,
      name: id,
      cluster,
      maps: Array.from({ length: maps }, () => ({
        memoryMb: 512,
        inputBytes: 1000,
        preferredWorkers: [],
        data: undefined,
      })),
      reduces: Array.from({ length: reduces }, () => ({
        memoryMb: 512,
        inputBytes: 0,
        preferredWorkers: [],
        data: undefined,
      })),
      data: undefined,
    },
    now,
  ).job;
}

/** Applies `decisions` the way an engine does: snapshot, check (which must pass), apply. */
function decide(books: Books, decisions: readonly Decision[], now: number): Effect[] {
  assert.deepEqual(books.check(books.snapshot(TICK, now), decisions), []);
  return books.apply(decisions, now);
}

function problems(books: Books, decisions: readonly Decision[], now: number): string[] {
  return books.check(books.snapshot(TICK, now), decisions);
}

function clusterOf(books: Books, name: string): string[] {
  return books
    .liveWorkers()
    .filter((w) => w.cluster === name)
    .map((w) => w.shape.id);
}

function kindsOf(effects: readonly Effect[]): string[] {
  return effects.map((e) => e.kind);
}

function of<K extends Effect['kind']>(effects: readonly Effect[], kind: K): Array<Extract<Effect, { kind: K }>> {
  return effects.filter((e): e is Extract<Effect, { kind: K }> => e.kind === kind);
}

/** Cluster A with core nodes w1 (r1) and w4 (r2) after its input is loaded. */
function withActiveA(options: ConstructorParameters<typeof Books>[0] = {}): Books {
  const books = pool(options);
  books.mrClusters.request({ name: 'A', minNodes: 2, inputBytes: 10 * MiB }, 0);
  books.mrClusters.inputLoaded('A', 5);
  return books;
}

describe('books: MR-cluster requests and admission', () => {
  it(
    'an admitted cluster gets free nodes as core nodes, one rack ' +
      'after the other, then loads its input and is active',
    () => {
      const books = pool();
      const effects = books.mrClusters.request({ name: 'A', minNodes: 2, inputBytes: 10 * MiB }, 0);
      // Free w1..w6 in id order: w1 (r1); then r2 has none of A's nodes and r1 one: w4.
      assert.deepEqual(clusterOf(books, 'A'), ['w1', 'w4']);
      assert.deepEqual(kindsOf(effects), ['mr-cluster', 'mr-cluster', 'worker-moved', 'worker-moved', 'load-input']);
      assert.deepEqual(
        of(effects, 'mr-cluster').map((e) => `${e.from}->${e.to}`),
        ['new->queued', 'queued->activating'],
      );
      assert.deepEqual(of(effects, 'load-input')[0]!.workerIds, ['w1', 'w4']);
      assert.equal(of(effects, 'load-input')[0]!.bytes, 10 * MiB);
      assert.equal(books.mrClusters.cluster('A')!.state, 'activating');
      const loaded = books.mrClusters.inputLoaded('A', 7);
      assert.deepEqual(
        of(loaded, 'mr-cluster').map((e) => `${e.from}->${e.to}`),
        ['activating->active'],
      );
      const view = books.snapshot(TICK, 7).mrClusters!;
      assert.deepEqual(
        view.map((c) => [c.name, c.state, c.minNodes, c.activeSince]),
        [['A', 'active', 2, 7]],
      );
      const w1 = books.snapshot(TICK, 7).workers.find((w) => w.id === 'w1')!;
      assert.equal(w1.nodeKind, 'core');
      assert.equal(w1.storedBytes, 0);
      assert.equal(
        books.snapshot(TICK, 7).workers.find((w) => w.id === 'w2')!.nodeKind,
        undefined,
        'a free worker has no kind',
      );
    },
  );

  it(
    'requests wait in one FIFO queue while the minimum shares do ' +
      'not fit the pool; a release admits the head, then the next',
    () => {
      const books = withActiveA();
      books.mrClusters.request({ name: 'B', minNodes: 3 }, 10);
      // 2 + 3 <= 6: admitted; free w2 w3 w5 w6: w2 (r1), then r2 (none of B's) w5, then a tie (one each): w3.
      assert.deepEqual(clusterOf(books, 'B'), ['w2', 'w3', 'w5']);
      assert.equal(books.mrClusters.cluster('B')!.state, 'active', 'no input to load');
      books.mrClusters.request({ name: 'C', minNodes: 2 }, 20);
      assert.equal(books.mrClusters.cluster('C')!.state, 'queued', '2 + 3 + 2 = 7 > 6');
      assert.match(
        books.mrClusters.queueReason('C')!,
        /minimum share of 2 nodes plus the 5 the admitted clusters keep exceeds the pool of 6 live workers/,
      );
      books.mrClusters.request({ name: 'D', minNodes: 1 }, 30);
      assert.equal(books.mrClusters.cluster('D')!.state, 'queued', 'D would fit (6 <= 6) but waits behind C');
      assert.match(books.mrClusters.queueReason('D')!, /behind 1 earlier request/);
      assert.deepEqual(clusterOf(books, 'default'), ['w6']);
      const effects = decide(books, [{ kind: 'deactivate-cluster', cluster: 'A' }], 40);
      // A holds no output: released at once; C (3 + 2 = 5) takes w1 (r1) and w4 (r2); D (6) the last free node.
      assert.deepEqual(
        of(effects, 'mr-cluster').map((e) => `${e.cluster.name}:${e.from}->${e.to}`),
        [
          'A:active->deactivating',
          'A:deactivating->released',
          'C:queued->activating',
          'D:queued->activating',
          'C:activating->active',
          'D:activating->active',
        ],
      );
      assert.deepEqual(clusterOf(books, 'C'), ['w1', 'w4']);
      assert.deepEqual(clusterOf(books, 'D'), ['w6']);
      assert.equal(books.mrClusters.cluster('A'), undefined);
      assert.deepEqual(
        books.snapshot(TICK, 40).mrClusters!.map((c) => c.name),
        ['B', 'C', 'D'],
      );
    },
  );

  it('bad requests are EBADCONF with the reason', () => {
    const books = withActiveA();
    const bad = (req: { name: string; minNodes: number }, pattern: RegExp) =>
      assert.throws(
        () => books.mrClusters.request(req, 1),
        (e: unknown) => e instanceof MinimrError && e.code === 'EBADCONF' && pattern.test(e.message),
      );
    bad({ name: 'A', minNodes: 1 }, /MR-cluster "A" is already active/);
    bad({ name: 'B', minNodes: 0 }, /minimum share must be a whole number of nodes >= 1, got 0/);
    bad({ name: 'B', minNodes: 1.5 }, /got 1.5/);
    bad({ name: 'default', minNodes: 1 }, /other than "" and "default"/);
  });

  it('a job for an unknown or deactivating cluster is ENOMRCLUSTER; a queued cluster takes jobs into its queue', () => {
    const books = withActiveA();
    assert.throws(
      () => submit(books, 'job_1', 'Z', 1, 0),
      (e: unknown) =>
        e instanceof MinimrError &&
        e.code === 'ENOMRCLUSTER' &&
        /"Z" is unknown; MR-clusters taking jobs: A/.test(e.message),
    );
    assert.equal(books.job('job_1'), undefined, 'a refused job leaves nothing in the books');
    books.mrClusters.request({ name: 'Q', minNodes: 5 }, 1);
    assert.equal(books.mrClusters.cluster('Q')!.state, 'queued');
    submit(books, 'job_2', 'Q', 1, 0);
    assert.equal(books.mrClusters.cluster('Q')!.activeJobs, 1);
    decide(books, [{ kind: 'deactivate-cluster', cluster: 'A' }], 2);
    // A is released at once (nothing to save), so it is unknown now; Q (5 <= 6) got admitted.
    assert.equal(books.mrClusters.cluster('Q')!.state, 'active');
    assert.throws(
      () => submit(books, 'job_3', 'A', 1, 0, 3),
      (e: unknown) => e instanceof MinimrError && e.code === 'ENOMRCLUSTER',
    );
  });

  it("before any request, a job's cluster is a label only", () => {
    const books = pool();
    const job = submit(books, 'job_1', 'anything', 1, 0);
    assert.equal(job.cluster, 'anything');
    assert.equal(books.snapshot(TICK, 0).mrClusters, undefined);
  });
});

describe('books: MR-cluster output blocks and node kinds', () => {
  /** A: cores w1 (r1) and w4 (r2), transient-core w2 (r1), transient w3 (r1); output replication 2. */
  function shaped(): Books {
    const books = withActiveA({ mrClusters: { outputReplication: 2, blockBytes: 64 * MiB } });
    decide(
      books,
      [
        { kind: 'move-node', workerId: 'w2', toCluster: 'A', nodeKind: 'transient-core' },
        { kind: 'move-node', workerId: 'w3', toCluster: 'A', nodeKind: 'transient' },
      ],
      10,
    );
    return books;
  }

  it(
    'output is blocks of the writer when it stores, then of core ' +
      'nodes off its rack; a transient writer stores nothing',
    () => {
      const books = shaped();
      const job = submit(books, 'job_1', 'A', 0, 2, 10);
      books.attemptSucceeded(launch(books, job.reduces[0]!, 'w2', 11), 20, { inputBytes: 0, outputBytes: 100 * MiB });
      // 100 MiB = blocks of 64 and 36 MiB; each: the writer w2 (transient-core, r1), then a core off r1: w4.
      const blocks = [...books.mrClusters.cluster('A')!.blocks.values()];
      assert.deepEqual(
        blocks.map((b) => [b.bytes / MiB, b.replicas]),
        [
          [64, ['w2', 'w4']],
          [36, ['w2', 'w4']],
        ],
      );
      books.attemptSucceeded(launch(books, job.reduces[1]!, 'w3', 21), 30, { inputBytes: 0, outputBytes: 10 * MiB });
      // Transient w3 stores nothing: the least loaded core (w1, no blocks; w4 has two) first, then off w1's rack: w4.
      assert.deepEqual([...books.mrClusters.cluster('A')!.blocks.values()][2]!.replicas, ['w1', 'w4']);
      const views = new Map(books.snapshot(TICK, 30).workers.map((w) => [w.id, w]));
      assert.deepEqual(
        ['w1', 'w2', 'w3', 'w4'].map((id) => [views.get(id)!.nodeKind, views.get(id)!.storedBytes! / MiB]),
        [
          ['core', 10],
          ['transient-core', 100],
          ['transient', 0],
          ['core', 110],
        ],
      );
      const a = books.snapshot(TICK, 30).mrClusters![0]!;
      assert.equal(a.storedBytes, 110 * MiB, 'each block counted once');
      assert.equal(a.tasksCompleted, 2);
      assert.deepEqual(books.mrClusters.blockReport('A'), {
        blocks: 3,
        bytes: 110 * MiB,
        replicas: 6,
        underReplicated: 0,
        missing: [],
      });
    },
  );

  it("tasks run only on their cluster's nodes", () => {
    const books = shaped();
    books.mrClusters.request({ name: 'B', minNodes: 1 }, 11);
    const job = submit(books, 'job_1', 'A', 1, 0, 12);
    const onB = clusterOf(books, 'B')[0]!;
    assert.deepEqual(
      problems(
        books,
        [{ kind: 'launch', taskId: job.maps[0]!.id, jobId: 'job_1', workerId: onB, locality: 'any' }],
        12,
      ),
      [`decision 0: launches a task of job_1 (MR-cluster A) on worker ${onB} of MR-cluster B`],
    );
  });

  it("a job that ends counts once in its cluster; a map-only job's maps write its output", () => {
    const books = shaped();
    const job = submit(books, 'job_1', 'A', 1, 0, 10);
    books.attemptSucceeded(launch(books, job.maps[0]!, 'w1', 11), 12, { inputBytes: 1000, outputBytes: 5 * MiB });
    books.jobCommitted(job, 13);
    const a = books.mrClusters.cluster('A')!;
    assert.equal(a.jobsCompleted, 1);
    assert.equal(a.activeJobs, 0);
    assert.equal(a.storedBytes, 5 * MiB);
  });
});

describe('books: shrinking MR-clusters', () => {
  /** As `shaped` above, with w5 also transient-core, and a job whose map on w3 is done and another map runs there. */
  function busy(replication = 2) {
    const books = withActiveA({ mrClusters: { outputReplication: replication, blockBytes: 64 * MiB } });
    decide(
      books,
      [
        { kind: 'move-node', workerId: 'w2', toCluster: 'A', nodeKind: 'transient-core' },
        { kind: 'move-node', workerId: 'w3', toCluster: 'A', nodeKind: 'transient' },
        { kind: 'move-node', workerId: 'w5', toCluster: 'A', nodeKind: 'transient-core' },
      ],
      10,
    );
    const job = submit(books, 'job_1', 'A', 2, 2, 10);
    books.attemptSucceeded(launch(books, job.maps[0]!, 'w3', 11), 12, { inputBytes: 1000, outputBytes: 1000 });
    const running = launch(books, job.maps[1]!, 'w3', 12);
    return { books, job, running };
  }

  it(
    'instant preemption of a transient node: its attempt is killed ' +
      'without counting, its map output re-run, it moves at once',
    () => {
      const { books, job, running } = busy();
      const effects = decide(
        books,
        [{ kind: 'move-node', workerId: 'w3', toCluster: 'default', preemption: 'instant' }],
        20,
      );
      assert.deepEqual(kindsOf(effects), ['attempt-ended', 'map-rerun', 'worker-moved']);
      assert.equal(running.state, 'killed');
      assert.equal(running.error?.details?.by, 'shrink');
      assert.equal(job.maps[1]!.failures, 0);
      assert.equal(job.maps[0]!.state, 'pending', 'its output left with the node: re-run');
      assert.equal(books.worker('w3')!.cluster, 'default');
      assert.equal(books.snapshot(TICK, 20).workers.find((w) => w.id === 'w3')!.nodeKind, undefined);
    },
  );

  it(
    'delayed preemption copies every block the node holds onto the ' +
      'staying storing nodes, core first; it drains, then leaves',
    () => {
      const { books, job, running } = busy();
      // Two reduces write on w5 (transient-core, r2): replicas [w5, w1] (the core off r2) each.
      books.attemptSucceeded(running, 14, { inputBytes: 1000, outputBytes: 1000 });
      books.attemptSucceeded(launch(books, job.reduces[0]!, 'w5', 15), 16, { inputBytes: 0, outputBytes: 64 * MiB });
      books.attemptSucceeded(launch(books, job.reduces[1]!, 'w5', 15), 17, { inputBytes: 0, outputBytes: 64 * MiB });
      const blocks = [...books.mrClusters.cluster('A')!.blocks.values()];
      assert.deepEqual(
        blocks.map((b) => b.replicas),
        [
          ['w5', 'w1'],
          ['w5', 'w1'],
        ],
      );
      // w2 holds nothing, so it must go first: moving w5 alone breaks the order.
      assert.deepEqual(
        problems(books, [{ kind: 'move-node', workerId: 'w5', toCluster: 'default', preemption: 'delayed' }], 20),
        ['decision 0: transient-core node w5 (134217728 bytes stored) leaves A before w2 (0 bytes)'],
      );
      const effects = decide(
        books,
        [
          { kind: 'move-node', workerId: 'w2', toCluster: 'default', preemption: 'delayed' },
          { kind: 'move-node', workerId: 'w5', toCluster: 'default', preemption: 'delayed' },
        ],
        20,
      );
      // w2 leaves at once (nothing stored); w5's blocks go to the one staying storing node without them: core w4.
      const copies = of(effects, 'replicate-block');
      assert.deepEqual(
        copies.map((c) => [c.block.id, c.fromWorkerId, c.toWorkerId, c.cause]),
        blocks.map((b) => [b.id, 'w5', 'w4', 'drain']),
      );
      assert.deepEqual(
        of(effects, 'worker-moved').map((e) => e.worker.shape.id),
        ['w2'],
      );
      const w5 = books.snapshot(TICK, 20).workers.find((w) => w.id === 'w5')!;
      assert.equal(w5.leavingFor, 'default');
      const other = submit(books, 'job_2', 'A', 1, 0, 20);
      assert.deepEqual(
        problems(
          books,
          [{ kind: 'launch', taskId: other.maps[0]!.id, jobId: 'job_2', workerId: 'w5', locality: 'any' }],
          20,
        ),
        ['decision 0: launches on worker w5, which is draining out of MR-cluster A'],
      );
      assert.deepEqual(kindsOf(books.mrClusters.blockCopied(blocks[0]!.id, 'w4', 25)), []);
      assert.equal(books.worker('w5')!.cluster, 'A', 'one copy still on its way');
      assert.deepEqual(kindsOf(books.mrClusters.blockCopied(blocks[1]!.id, 'w4', 26)), ['worker-moved']);
      assert.equal(books.worker('w5')!.cluster, 'default');
      assert.deepEqual(
        blocks.map((b) => b.replicas),
        [
          ['w1', 'w4'],
          ['w1', 'w4'],
        ],
      );
      assert.deepEqual(books.mrClusters.blockReport('A'), {
        blocks: 2,
        bytes: 128 * MiB,
        replicas: 4,
        underReplicated: 0,
        missing: [],
      });
    },
  );

  it(
    'instant preemption leaves a block under-replicated when ' +
      'another replica exists, and copies it when it held the last one',
    () => {
      // The reduce writes on w2; w5 holds nothing and leaves first, as the removal order says.
      const two = busy(2);
      two.books.attemptSucceeded(two.running, 14, { inputBytes: 1000, outputBytes: 1000 });
      two.books.attemptSucceeded(launch(two.books, two.job.reduces[0]!, 'w2', 15), 16, {
        inputBytes: 0,
        outputBytes: MiB,
      });
      const shrinkBoth: Decision[] = [
        { kind: 'move-node', workerId: 'w5', toCluster: 'default', preemption: 'instant' },
        { kind: 'move-node', workerId: 'w2', toCluster: 'default', preemption: 'instant' },
      ];
      // Replication 2: [w2, w4]; w4 stays, so w2 leaves at once and the block keeps one replica.
      assert.deepEqual(kindsOf(decide(two.books, shrinkBoth, 20)), ['worker-moved', 'worker-moved']);
      assert.deepEqual(two.books.mrClusters.blockReport('A'), {
        blocks: 1,
        bytes: MiB,
        replicas: 1,
        underReplicated: 1,
        missing: [],
      });

      const one = busy(1);
      one.books.attemptSucceeded(one.running, 14, { inputBytes: 1000, outputBytes: 1000 });
      one.books.attemptSucceeded(launch(one.books, one.job.reduces[0]!, 'w2', 15), 16, {
        inputBytes: 0,
        outputBytes: MiB,
      });
      const sole = decide(one.books, shrinkBoth, 20);
      // Replication 1: w2 holds the only replica; the least loaded staying storing node, core first: w1
      // (w4 too is empty; w1 comes first).
      assert.deepEqual(kindsOf(sole), ['worker-moved', 'replicate-block']);
      assert.deepEqual(
        of(sole, 'replicate-block').map((c) => [c.toWorkerId, c.cause]),
        [['w1', 'last-replica']],
      );
      assert.equal(one.books.worker('w2')!.cluster, 'A');
      one.books.mrClusters.blockCopied(of(sole, 'replicate-block')[0]!.block.id, 'w1', 21);
      assert.equal(one.books.worker('w2')!.cluster, 'default');
      assert.deepEqual(one.books.mrClusters.blockReport('A'), {
        blocks: 1,
        bytes: MiB,
        replicas: 1,
        underReplicated: 0,
        missing: [],
      });
    },
  );

  it('core nodes never go below the minimum share; a moved node joins its new cluster as the decision says', () => {
    const { books } = busy();
    assert.deepEqual(problems(books, [{ kind: 'move-node', workerId: 'w1', toCluster: 'default' }], 20), [
      'decision 0: moving core node w1 leaves MR-cluster A 1 core nodes, below its minimum share of 2',
    ]);
    books.mrClusters.request({ name: 'B', minNodes: 1 }, 20);
    // B took the last free node (w6) as its core; w3 joins it as a transient node.
    decide(books, [{ kind: 'move-node', workerId: 'w3', toCluster: 'B', nodeKind: 'transient' }], 21);
    assert.equal(books.mrClusters.nodeKind('w3'), 'transient');
    assert.equal(books.worker('w3')!.cluster, 'B');
  });

  it(
    'a copy whose target left meanwhile is made again elsewhere; a ' +
      'lost worker with the last replica leaves the block missing',
    () => {
      const { books, job, running } = busy(1);
      books.attemptSucceeded(running, 14, { inputBytes: 1000, outputBytes: 1000 });
      books.attemptSucceeded(launch(books, job.reduces[0]!, 'w5', 15), 16, { inputBytes: 0, outputBytes: MiB });
      books.attemptSucceeded(launch(books, job.reduces[1]!, 'w2', 15), 16, { inputBytes: 0, outputBytes: MiB });
      const [copy] = of(
        decide(books, [{ kind: 'move-node', workerId: 'w2', toCluster: 'default', preemption: 'delayed' }], 20),
        'replicate-block',
      );
      assert.equal(copy!.toWorkerId, 'w1');
      const lost = books.workerLost('w1', 21, 'crash');
      // A is below its minimum share without w1: the free w6 takes its place as a core node.
      assert.deepEqual(
        of(lost, 'worker-moved').map((e) => [e.worker.shape.id, e.worker.cluster]),
        [['w6', 'A']],
      );
      assert.equal(books.mrClusters.nodeKind('w6'), 'core');
      // w1 died before the copy landed: again, onto the next storing node (cores w4 and w6 are empty: w4).
      const again = books.mrClusters.blockCopied(copy!.block.id, 'w1', 22);
      assert.deepEqual(
        of(again, 'replicate-block').map((c) => c.toWorkerId),
        ['w4'],
      );
      books.mrClusters.blockCopied(copy!.block.id, 'w4', 23);
      assert.equal(books.worker('w2')!.cluster, 'default');
      // w5's block had its only replica on w5: losing w5 loses it, and the report says which.
      const w5Block = [...books.mrClusters.cluster('A')!.blocks.values()].find((b) => b.replicas.includes('w5'))!;
      books.workerLost('w5', 24, 'crash');
      assert.deepEqual(
        books.mrClusters.blockReport('A').missing.map((b) => b.id),
        [w5Block.id],
      );
    },
  );

  it('deactivation saves the output first, then releases every node; moving a node out meanwhile is refused', () => {
    const books = withActiveA();
    const job = submit(books, 'job_1', 'A', 1, 0, 6);
    assert.match(problems(books, [{ kind: 'deactivate-cluster', cluster: 'A' }], 6)[0]!, /which has jobs/);
    books.attemptSucceeded(launch(books, job.maps[0]!, 'w1', 7), 8, { inputBytes: 1000, outputBytes: 3 * MiB });
    books.jobCommitted(job, 9);
    const effects = decide(books, [{ kind: 'deactivate-cluster', cluster: 'A' }], 10);
    assert.deepEqual(
      of(effects, 'save-output').map((e) => e.bytes),
      [3 * MiB],
    );
    assert.deepEqual(clusterOf(books, 'A'), ['w1', 'w4'], 'its nodes wait for the save');
    assert.match(
      problems(books, [{ kind: 'move-node', workerId: 'w4', toCluster: 'default' }], 10)[0]!,
      /releases its nodes itself/,
    );
    const released = books.mrClusters.outputSaved('A', 30);
    assert.deepEqual(
      of(released, 'worker-moved').map((e) => [e.worker.shape.id, e.from]),
      [
        ['w1', 'A'],
        ['w4', 'A'],
      ],
    );
    assert.deepEqual(clusterOf(books, 'A'), []);
    assert.equal(books.mrClusters.cluster('A'), undefined);
  });
});

describe("books: MR-clusters with the engine's real blocks (engineBlocks, as the JobTracker runs them)", () => {
  /** A with core nodes w1 and w4, and w2 moved in as a transient-core node. */
  function engineA(): Books {
    const books = withActiveA({ mrClusters: { engineBlocks: true, outputReplication: 2 } });
    decide(books, [{ kind: 'move-node', workerId: 'w2', toCluster: 'A', nodeKind: 'transient-core' }], 6);
    return books;
  }

  it(
    "a task's output bytes make no blocks of their own: the engine " +
      'reports each block, its replicas counted only on storing ' +
      'members',
    () => {
      const books = engineA();
      const job = submit(books, 'job_1', 'A', 1, 0, 10);
      books.attemptSucceeded(launch(books, job.maps[0]!, 'w2', 11), 12, { inputBytes: 1000, outputBytes: 5 * MiB });
      assert.equal(books.mrClusters.blockReport('A').blocks, 0);
      // w3 is free (not in A): a replica there is not A's.
      books.mrClusters.blockStored('A', { id: 'blk_7', bytes: 5 * MiB, jobId: 'job_1', input: false }, [
        'w2',
        'w1',
        'w3',
      ]);
      books.mrClusters.blockStored('A', { id: 'blk_8', bytes: 3 * MiB, jobId: 'input', input: true }, ['w1', 'w4']);
      const a = books.mrClusters.cluster('A')!;
      assert.deepEqual(
        [...a.blocks.values()].map((b) => [b.id, b.replicas]),
        [
          ['blk_7', ['w2', 'w1']],
          ['blk_8', ['w1', 'w4']],
        ],
      );
      assert.equal(a.storedBytes, 5 * MiB, 'input is not output (DU)');
      const w = (id: string) => books.snapshot(TICK, 12).workers.find((x) => x.id === id)!;
      assert.deepEqual([w('w1').storedBytes, w('w2').storedBytes, w('w4').storedBytes], [8 * MiB, 5 * MiB, 3 * MiB]);
      books.mrClusters.replicaAdded('blk_7', 'w4');
      books.mrClusters.replicaAdded('blk_7', 'w3');
      assert.deepEqual(a.blocks.get('blk_7')!.replicas, ['w2', 'w1', 'w4']);
      books.mrClusters.replicaRemoved('blk_7', 'w1');
      assert.deepEqual(a.blocks.get('blk_7')!.replicas, ['w2', 'w4']);
      assert.deepEqual(books.mrClusters.blockRemoved('blk_8', 13), []);
      assert.deepEqual([w('w1').storedBytes, w('w4').storedBytes], [0, 5 * MiB]);
      assert.deepEqual(books.mrClusters.blockReport('A'), {
        blocks: 1,
        bytes: 5 * MiB,
        replicas: 2,
        underReplicated: 0,
        missing: [],
      });
    },
  );

  it(
    'a drain waits for the copies of the real blocks; a block ' +
      'removed meanwhile needs no copy, and the node leaves',
    () => {
      const books = engineA();
      books.mrClusters.blockStored('A', { id: 'blk_1', bytes: MiB, jobId: 'job_1', input: false }, ['w2']);
      books.mrClusters.blockStored('A', { id: 'blk_2', bytes: MiB, jobId: 'job_1', input: false }, ['w2', 'w1']);
      const effects = decide(
        books,
        [{ kind: 'move-node', workerId: 'w2', toCluster: 'default', preemption: 'delayed' }],
        20,
      );
      // Both onto core w4: the least loaded (w1 holds blk_2), then the only core without blk_2.
      assert.deepEqual(
        of(effects, 'replicate-block').map((c) => [c.block.id, c.fromWorkerId, c.toWorkerId]),
        [
          ['blk_1', 'w2', 'w4'],
          ['blk_2', 'w2', 'w4'],
        ],
      );
      assert.deepEqual(kindsOf(books.mrClusters.blockCopied('blk_1', 'w4', 21)), []);
      assert.deepEqual(kindsOf(books.mrClusters.blockRemoved('blk_2', 22)), ['worker-moved']);
      assert.equal(books.worker('w2')!.cluster, 'default');
      assert.deepEqual(books.mrClusters.blockReport('A'), {
        blocks: 1,
        bytes: MiB,
        replicas: 1,
        underReplicated: 1,
        missing: [],
      });
    },
  );
});
