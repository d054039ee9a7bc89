import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MinimrError } from '../../src/errors.js';
import {
  clusterFromSlsTrace,
  fawkesWorkload,
  parseSlsTrace,
  readWorkloadFile,
  readWorkloadJson,
  tyrexWorkload,
  workloadToJson,
  improvedFairWorkload,
} from '../../src/workloads/index.js';

// Maps at container.priority 20 and reduces at 10, as Hadoop's SLS sample traces have them.
const GOOD = `
{
  "am.type" : "mapreduce",
  "job.start.ms" : 5000,
  "job.end.ms" : 95375,
  "job.queue.name" : "sls_queue_1",
  "job.id" : "job_b",
  "job.user" : "default",
  "job.tasks" : [ {
    "container.host" : "/default-rack/node1",
    "container.start.ms" : 6664,
    "container.end.ms" : 23707,
    "container.priority" : 20,
    "container.type" : "map"
  }, {
    "container.host" : "/rack2/node3",
    "container.start.ms" : 24000,
    "container.end.ms" : 30000,
    "container.priority" : 10,
    "container.type" : "reduce"
  } ]
}
{
  "am.type" : "mapreduce",
  "job.start.ms" : 0,
  "job.end.ms" : 1000,
  "job.queue.name" : "sls_queue_2",
  "job.id" : "job_a",
  "job.tasks" : [ { "container.host" : "/rack2/node2", "container.start.ms" : 100, "container.end.ms" : 600, "container.priority" : 20 } ]
}`;

const CONTRADICTION = GOOD.replace(
  '"container.priority" : 20,\n    "container.type" : "map"',
  '"container.priority" : 10,\n    "container.type" : "map"',
);

describe('SLS traces', () => {
  test('concatenated job objects become jobs in start order with maps, reduces, queues and hosts', () => {
    const w = parseSlsTrace(GOOD);
    assert.deepEqual(
      w.jobs.map((j) => [j.id, j.name, j.submitMs, j.pool, j.maps.length, j.reduces.length]),
      [
        ['job_0001', 'job_a', 0, 'sls_queue_2', 1, 0],
        ['job_0002', 'job_b', 5000, 'sls_queue_1', 1, 1],
      ],
    );
    assert.deepEqual(w.jobs[1]!.maps[0], { workMs: 23707 - 6664, memoryMb: 1024, replicas: ['node1'], inputBytes: 0 });
    assert.equal(w.jobs[1]!.reduces[0]!.workMs, 6000);
    const shape = clusterFromSlsTrace(GOOD, { mapSlots: 2, reduceSlots: 1, memoryMb: 4096, diskMBps: 100 });
    assert.deepEqual(
      shape.workers.map((x) => [x.id, x.rack]),
      [
        ['node1', 'default-rack'],
        ['node2', 'rack2'],
        ['node3', 'rack2'],
      ],
    );
  });

  test('a JSON array of jobs is read too', () => {
    const objects = GOOD.trim().split(/\n}\n{/);
    const array = `[${objects[0]}\n},\n{${objects[1]}]`;
    assert.deepEqual(parseSlsTrace(array), parseSlsTrace(GOOD));
  });

  test('job.end.ms is not read (issue 36: DSS writes 200000 for every job, before many starts)', () => {
    assert.deepEqual(parseSlsTrace(GOOD.replace('"job.end.ms" : 1000', '"job.end.ms" : -1')), parseSlsTrace(GOOD));
  });

  const cases: Array<[string, string, RegExp]> = [
    ['missing job.id', GOOD.replace('"job.id" : "job_a",', ''), /job 2: field "job.id"/],
    [
      'container end before start',
      GOOD.replace('"container.end.ms" : 600', '"container.end.ms" : 50'),
      /job "job_a": task 1: field "container.end.ms" \(50\) is before/,
    ],
    [
      'bad priority',
      GOOD.replace('"container.priority" : 20 }', '"container.priority" : 30 }'),
      /job "job_a": task 1: field "container.priority" must be 20 \(map\) or 10 \(reduce\)/,
    ],
    [
      'priority contradicts type',
      CONTRADICTION,
      /job "job_b": task 1: "container.priority" 10 contradicts "container.type" "map"/,
    ],
    ['bad host', GOOD.replace('/rack2/node2', 'node2'), /job "job_a": task 1: field "container.host"/],
    [
      'tasks not an array',
      GOOD.replace(/"job.tasks" : \[ \{ "container.host" : "\/rack2\/node2"[^\]]*\]/, '"job.tasks" : 3'),
      /job "job_a": field "job.tasks" must be an array/,
    ],
    [
      'other AM type',
      GOOD.replace('"am.type" : "mapreduce",\n  "job.start.ms" : 0', '"am.type" : "spark",\n  "job.start.ms" : 0'),
      /job "job_a": field "am.type" is "spark"/,
    ],
    ['truncated', GOOD.slice(0, -3), /not closed/],
    ['duplicate id', GOOD.replace('"job.id" : "job_a"', '"job.id" : "job_b"'), /"job.id" is used twice/],
  ];
  for (const [name, text, message] of cases) {
    test(`bad trace: ${name} -> EBADCONF naming the job and field`, () => {
      assert.throws(
        () => parseSlsTrace(text),
        (err: unknown) => err instanceof MinimrError && err.code === 'EBADCONF' && message.test(err.message),
      );
    });
  }
});

describe('minimr workload JSON', () => {
  test('round trip of generated workloads (with pools, penalties and replicas)', () => {
    for (const w of [
      tyrexWorkload({ variant: 'lvw', seed: 5, scale: 0.1 }),
      improvedFairWorkload(),
      fawkesWorkload({ variant: 'e', scale: 0.05 }),
    ]) {
      const text = workloadToJson(w);
      assert.deepEqual(readWorkloadJson(text), w);
      assert.deepEqual(readWorkloadFile(text, 'x.json'), w);
    }
  });

  test('MR-clusters: each named once with a whole minimum share', () => {
    const base = JSON.parse(workloadToJson(fawkesWorkload({ variant: 'a', scale: 0.02 }))) as Record<string, unknown>;
    const withClusters = (mrClusters: unknown) => JSON.stringify({ ...base, mrClusters });
    assert.throws(
      () => readWorkloadJson(withClusters([{ name: 'x', minNodes: 0 }])),
      /MR-cluster "x": "minNodes" must be a whole number >= 1/,
    );
    assert.throws(
      () =>
        readWorkloadJson(
          withClusters([
            { name: 'x', minNodes: 1 },
            { name: 'x', minNodes: 2 },
          ]),
        ),
      /MR-cluster "x" is listed twice/,
    );
    assert.throws(() => readWorkloadJson(withClusters([{ name: 'default', minNodes: 1 }])), /other than "default"/);
    assert.throws(() => readWorkloadJson(withClusters({})), /"mrClusters" must be an array/);
  });

  test('bad fields are EBADCONF naming the job and field', () => {
    const w = JSON.parse(workloadToJson(tyrexWorkload({ variant: 'hvw', seed: 1, scale: 0.02 }))) as {
      jobs: Array<Record<string, unknown>>;
    };
    w.jobs[1]!.submitMs = -5;
    assert.throws(() => readWorkloadJson(JSON.stringify(w)), /job "job_0002": "submitMs" must be a number >= 0/);
    w.jobs[1]!.submitMs = 5;
    (w.jobs[1]!.maps as Array<Record<string, unknown>>)[0]!.memoryMb = 0;
    assert.throws(
      () => readWorkloadJson(JSON.stringify(w)),
      (err: unknown) =>
        err instanceof MinimrError &&
        err.code === 'EBADCONF' &&
        /job "job_0002": map 0: "memoryMb" must be positive/.test(err.message),
    );
    assert.throws(() => readWorkloadJson('{"format":"other"}'), /"format" must be "minimr-workload"/);
    (w.jobs[1]!.maps as Array<Record<string, unknown>>)[0]!.memoryMb = 100;
    w.jobs[1]!.inputPlacement = { replication: 0, windowMs: 10 };
    assert.throws(() => readWorkloadJson(JSON.stringify(w)), /job "job_0002": "inputPlacement" must be/);
  });
});
