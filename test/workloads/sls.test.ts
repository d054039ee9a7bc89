import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { MinimrError } from '../../src/errors.js';
import { FifoPolicy } from '../../src/scheduler/index.js';
import { simulate } from '../../src/sim/index.js';
import { loadCluster, parseSlsNodes, parseSlsTrace } from '../../src/workloads/index.js';

// Hadoop's SLS sample job trace (SchedulerLoadSimulator.md, sls-jobs.json: maps at priority 20),
// with one reduce at priority 10 added to the first job.
const SLS_JOBS = `{
  "am.type" : "mapreduce",
  "job.start.ms" : 0,
  "job.end.ms" : 95375,
  "job.queue.name" : "sls_queue_1",
  "job.id" : "job_1",
  "job.user" : "default",
  "job.tasks" : [ {
    "container.host" : "/default-rack/node1",
    "container.start.ms" : 6664,
    "container.end.ms" : 23707,
    "container.priority" : 20,
    "container.type" : "map"
  }, {
    "container.host" : "/default-rack/node3",
    "container.start.ms" : 6665,
    "container.end.ms" : 21593,
    "container.priority" : 20,
    "container.type" : "map"
  }, {
    "container.host" : "/default-rack/node2",
    "container.start.ms" : 68770,
    "container.end.ms" : 86613,
    "container.priority" : 20,
    "container.type" : "map"
  }, {
    "container.host" : "/default-rack/node2",
    "container.start.ms" : 87000,
    "container.end.ms" : 95000,
    "container.priority" : 10
  } ]
}
{
  "am.type" : "mapreduce",
  "job.start.ms" : 105204,
  "job.end.ms" : 197256,
  "job.queue.name" : "sls_queue_2",
  "job.id" : "job_2",
  "job.user" : "default",
  "job.tasks" : [ {
    "container.host" : "/default-rack/node1",
    "container.start.ms" : 111822,
    "container.end.ms" : 133985,
    "container.priority" : 20,
    "container.type" : "map"
  }, {
    "container.host" : "/default-rack/node2",
    "container.start.ms" : 111788,
    "container.end.ms" : 131377,
    "container.priority" : 20,
    "container.type" : "map"
  } ]
}
`;

// An SLS --nodes file, one object per rack as slsrun.sh reads it; node3 names its own resources
// the way Hadoop's nodes-with-resources.json does.
const SLS_NODES = `{
  "rack" : "default-rack",
  "nodes" : [ { "node" : "node1" }, { "node" : "node2", "labels" : "label1" } ]
}
{
  "rack" : "rack2",
  "nodes" : [ { "node" : "node3", "memory-mb" : 4096, "vcores" : 2 } ]
}`;

function isBadConf(pattern: RegExp, details: Record<string, string> = {}) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof MinimrError, `expected a MinimrError, got ${String(err)}`);
    assert.equal(err.code, 'EBADCONF');
    assert.match(err.message, pattern);
    for (const [k, v] of Object.entries(details)) assert.equal(err.details[k], v, `details.${k}`);
    return true;
  };
}

describe('SLS job traces as Hadoop writes them', () => {
  test("Hadoop's sample: priority 20 containers are maps, 10 reduces; times, hosts and queues as written", () => {
    const w = parseSlsTrace(SLS_JOBS);
    assert.deepEqual(
      w.jobs.map((j) => [j.id, j.name, j.submitMs, j.pool]),
      [
        ['job_0001', 'job_1', 0, 'sls_queue_1'],
        ['job_0002', 'job_2', 105204, 'sls_queue_2'],
      ],
    );
    const [first, second] = w.jobs;
    assert.deepEqual(
      first!.maps.map((m) => [m.workMs, m.replicas]),
      [
        [23707 - 6664, ['node1']],
        [21593 - 6665, ['node3']],
        [86613 - 68770, ['node2']],
      ],
    );
    assert.deepEqual(first!.reduces, [{ workMs: 8000, memoryMb: 1024, inputBytes: 0 }]);
    assert.deepEqual(
      second!.maps.map((m) => m.workMs),
      [133985 - 111822, 131377 - 111788],
    );
    assert.equal(second!.reduces.length, 0);
  });
});

describe('bad SLS job traces', () => {
  // The reduce of job_1 is its 4th task.
  const REDUCE = `"container.host" : "/default-rack/node2",
    "container.start.ms" : 87000,
    "container.end.ms" : 95000,
    "container.priority" : 10`;
  const variant = (replacement: string) => {
    assert.ok(SLS_JOBS.includes(REDUCE));
    return SLS_JOBS.replace(REDUCE, replacement);
  };
  const cases: Array<[string, string, RegExp, Record<string, string>]> = [
    [
      'unknown container type',
      REDUCE.replace('"container.priority" : 10', '"container.type" : "shuffle"'),
      /job "job_1": task 4: field "container.type" must be "map" or "reduce", got "shuffle"/,
      { jobId: 'job_1', taskId: 'task 4', field: 'container.type' },
    ],
    [
      'start time of the wrong type',
      REDUCE.replace('87000', '"87000"'),
      /job "job_1": task 4: field "container.start.ms" must be a number >= 0, got "87000"/,
      { jobId: 'job_1', taskId: 'task 4', field: 'container.start.ms' },
    ],
    [
      'negative start time',
      REDUCE.replace('87000', '-87000'),
      /job "job_1": task 4: field "container.start.ms" must be a number >= 0, got -87000/,
      { jobId: 'job_1', taskId: 'task 4', field: 'container.start.ms' },
    ],
    [
      'end before start',
      REDUCE.replace('95000', '86000'),
      /job "job_1": task 4: field "container.end.ms" \(86000\) is before "container.start.ms" \(87000\)/,
      { jobId: 'job_1', taskId: 'task 4', field: 'container.end.ms' },
    ],
    [
      'missing host',
      REDUCE.replace('"container.host" : "/default-rack/node2",', ''),
      /job "job_1": task 4: field "container.host" must look like "\/rack\/node", got undefined/,
      { jobId: 'job_1', taskId: 'task 4', field: 'container.host' },
    ],
    [
      'memory of the wrong type',
      REDUCE.replace('"container.priority" : 10', '"container.priority" : 10, "container.memory" : "2g"'),
      /job "job_1": task 4: field "container.memory" must be a positive number of MB, got "2g"/,
      { jobId: 'job_1', taskId: 'task 4', field: 'container.memory' },
    ],
  ];
  for (const [name, replacement, message, details] of cases) {
    test(`${name} -> EBADCONF naming the job, the task and the field`, () => {
      assert.throws(() => parseSlsTrace(variant(replacement)), isBadConf(message, details));
    });
  }

  test("SLS's optional {num.nodes, num.racks} header is not a job", () => {
    const w = parseSlsTrace(`{ "num.nodes" : 3, "num.racks" : 1 }\n${SLS_JOBS}`);
    assert.deepEqual(w, parseSlsTrace(SLS_JOBS));
  });
});

describe('SLS node files', () => {
  test('one worker per node, racks without the leading "/", SLS defaults unless the node names its resources', () => {
    const shape = parseSlsNodes(SLS_NODES, { name: 'nodes.json' });
    assert.equal(shape.name, 'nodes.json');
    assert.deepEqual(shape.workers, [
      { id: 'node1', rack: 'default-rack', mapSlots: 10, reduceSlots: 10, memoryMb: 10240, diskMBps: 100 },
      { id: 'node2', rack: 'default-rack', mapSlots: 10, reduceSlots: 10, memoryMb: 10240, diskMBps: 100 },
      { id: 'node3', rack: 'rack2', mapSlots: 2, reduceSlots: 2, memoryMb: 4096, diskMBps: 100 },
    ]);
  });

  test('an array of racks, a rack written "/rack", and defaults from the options', () => {
    const shape = parseSlsNodes(
      '[{"rack": "/r1", "nodes": [{"node": "a"}]}, {"rack": "r2", "nodes": [{"node": "b"}]}]',
      { vcores: 4, memoryMb: 8192, diskMBps: 50 },
    );
    assert.deepEqual(shape.workers, [
      { id: 'a', rack: 'r1', mapSlots: 4, reduceSlots: 4, memoryMb: 8192, diskMBps: 50 },
      { id: 'b', rack: 'r2', mapSlots: 4, reduceSlots: 4, memoryMb: 8192, diskMBps: 50 },
    ]);
  });

  const cases: Array<[string, string, RegExp, Record<string, string>]> = [
    [
      'rack missing',
      '{"nodes": [{"node": "n1"}]}',
      /rack 1: field "rack" must be a non-empty rack name/,
      { field: 'rack' },
    ],
    [
      'nodes not an array',
      '{"rack": "r1", "nodes": {"node": "n1"}}',
      /rack "r1": field "nodes" must be an array/,
      { rack: 'r1', field: 'nodes' },
    ],
    [
      'node name not a string',
      '{"rack": "r1", "nodes": [{"node": 7}]}',
      /rack "r1": node 1: field "node" must be a non-empty string, got 7/,
      { rack: 'r1', field: 'node' },
    ],
    [
      'memory of the wrong type',
      '{"rack": "r1", "nodes": [{"node": "n1", "memory-mb": "4g"}]}',
      /rack "r1": node "n1": field "memory-mb" must be a non-negative integer, got "4g"/,
      { node: 'n1', field: 'memory-mb' },
    ],
    [
      'negative vcores',
      '{"rack": "r1", "nodes": [{"node": "n1", "vcores": -2}]}',
      /node "n1": field "vcores" must be a non-negative integer/,
      { node: 'n1', field: 'vcores' },
    ],
    [
      'node listed twice',
      '{"rack": "r1", "nodes": [{"node": "n1"}]} {"rack": "r2", "nodes": [{"node": "n1"}]}',
      /rack "r2": node "n1" is listed twice \(also in rack "r1"\)/,
      { node: 'n1', field: 'node' },
    ],
    ['no nodes', '{"rack": "r1", "nodes": []}', /lists no nodes/, {}],
  ];
  for (const [name, text, message, details] of cases) {
    test(`bad node file: ${name} -> EBADCONF naming the rack, node and field`, () => {
      assert.throws(() => parseSlsNodes(text), isBadConf(message, details));
    });
  }

  test(
    'loadCluster tells a minimr cluster file from an SLS node file, ' + 'and says what it expected otherwise',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'minimr-sls-'));
      try {
        const write = async (name: string, text: string) => {
          await writeFile(join(dir, name), text);
          return join(dir, name);
        };
        const sls = await loadCluster(await write('nodes.json', SLS_NODES));
        assert.deepEqual(
          sls.workers.map((x) => [x.id, x.rack]),
          [
            ['node1', 'default-rack'],
            ['node2', 'default-rack'],
            ['node3', 'rack2'],
          ],
        );
        const own = await loadCluster(
          await write(
            'own.json',
            JSON.stringify({
              name: 'two',
              workers: [{ id: 'w1', rack: 'r1', mapSlots: 1, reduceSlots: 1, memoryMb: 2048, diskMBps: 10 }],
            }),
          ),
        );
        assert.deepEqual(own, {
          name: 'two',
          workers: [{ id: 'w1', rack: 'r1', mapSlots: 1, reduceSlots: 1, memoryMb: 2048, diskMBps: 10 }],
        });
        const neither = await write('neither.json', '{"hosts": ["a", "b"]}');
        await assert.rejects(
          loadCluster(neither),
          isBadConf(
            /expected minimr cluster JSON .*"workers".* or a Hadoop SLS node file .*"rack".*"nodes".*; found an object with fields "hosts"/,
          ),
        );
        await assert.rejects(
          loadCluster(await write('broken.json', '{"rack": "r1", "nodes": [')),
          isBadConf(/broken\.json: the last JSON object is not closed/),
        );
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});

describe('SLS trace on its node file in the simulator', () => {
  test('under FIFO every job of the sample finishes', () => {
    const workload = parseSlsTrace(SLS_JOBS);
    const cluster = parseSlsNodes(SLS_NODES);
    const r = simulate({ workload, cluster, policy: new FifoPolicy(), heartbeatMs: 1000 });
    assert.equal(r.run.jobs.length, 2);
    for (const j of r.run.jobs) assert.equal(j.state, 'succeeded', `${j.id} did not finish`);
    // Job 2 is submitted at 105204 ms and its longest map takes 22163 ms.
    assert.ok(r.run.jobs[1]!.finishMs! >= 105204 + 22163);
  });
});
