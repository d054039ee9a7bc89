/**
 * Traces of the paper's simulator (DSS): SLS job objects whose tasks are groups with "c.nr",
 * "c.dur", "c.mem", "c.cores", "c.prio", "c.type", "c.penalty" and "c.ib", with a topology file
 * of racks and nodes. Expected workloads are written out by hand from the trace text.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import { createPolicy } from '../../src/scheduler/index.js';
import { simulate } from '../../src/sim/index.js';
import { loadWorkload, parseDssPenalty, readClusterFile, readWorkloadFile } from '../../src/workloads/index.js';

const TRACE =
  `{"am.type": "mapreduce", "job.id": "job_7", "job.start.ms": ` +
  `5000, "job.end.ms": 900000,
 "job.tasks": [
  {"c.nr": 1, ` +
  `"c.dur": 20000, "c.mem": 1000, "c.cores": 1, "c.prio": 10, ` +
  `"c.type": "REDUCE", "c.penalty": "POWER2", "c.ib": 1},
  ` +
  `{"c.nr": 3, "c.dur": 60000, "c.mem": 2048, "c.cores": 1, ` +
  `"c.prio": 20, "c.type": "MAP", "c.penalty": "STEP", "c.ib": ` +
  `1.5}
 ]}
{"am.type": "mapreduce", "job.id": "job_3", ` +
  `"job.start.ms": 0, "job.end.ms": 100000,
 "job.tasks": [ ` +
  `{"c.nr": 2, "c.dur": 1000, "c.mem": 500, "c.prio": 20, ` +
  `"c.type": "map"} ]}
{"am.type": "mapreduce", "job.id": "job_9", ` +
  `"job.start.ms": "job_7", "job.end.ms": 0,
 "job.tasks": [ ` +
  `{"c.nr": 1, "c.dur": 3000, "c.mem": 800, "c.prio": 20, ` +
  `"c.type": "MAP", "c.penalty": "NULL", "c.ib": 1} ]}`;

const TOPOLOGY = `{"rack": "rack1", "nodes": [{"node": "node1"}, {"node": "node2"}]}
{"rack": "rack2", "nodes": [{"node": "node3"}]}`;

describe('DSS traces', () => {
  test(
    'task groups become tasks with their duration, memory and ' + 'penalty model; jobs in start order, "after" kept',
    () => {
      const w = readWorkloadFile(TRACE, 'trace.json');
      assert.deepEqual(
        w.jobs.map((j) => [j.id, j.name, j.app, j.submitMs, j.after ?? null, j.maps.length, j.reduces.length]),
        [
          ['job_0001', 'job_3', 'dss', 0, null, 2, 0],
          ['job_0002', 'job_7', 'dss', 5000, null, 3, 1],
          ['job_0003', 'job_9', 'dss', 0, 'job_0002', 1, 0],
        ],
      );
      const j7 = w.jobs[1]!;
      assert.deepEqual(j7.maps[0], {
        workMs: 60_000,
        memoryMb: 2048,
        inputBytes: 0,
        replicas: [],
        penalty: { kind: 'step', factor: 1.5, minFraction: 0.1 },
      });
      assert.deepEqual(j7.reduces[0]!.penalty, { kind: 'power', exponent: 2, minFraction: 0.1 });
      assert.equal(w.jobs[0]!.maps[0]!.penalty, undefined, 'no penalty model: insensitive to memory');
      assert.deepEqual(w.jobs[2]!.maps[0]!.penalty, { kind: 'none' });
    },
  );

  test("the topology file is an SLS node file: node memory and cores as the paper's simulator is told", () => {
    const c = readClusterFile(TOPOLOGY, 'topo.json', { memoryMb: 10_240, vcores: 16 });
    assert.deepEqual(
      c.workers.map((w) => [w.id, w.rack, w.memoryMb, w.mapSlots]),
      [
        ['node1', 'rack1', 10_240, 16],
        ['node2', 'rack1', 10_240, 16],
        ['node3', 'rack2', 10_240, 16],
      ],
    );
  });

  test('runs unchanged under yarn and yarn-me', () => {
    const workload = readWorkloadFile(TRACE, 'trace.json');
    const cluster = readClusterFile(TOPOLOGY, 'topo.json', { memoryMb: 4096, vcores: 4 });
    for (const name of ['yarn', 'yarn-me']) {
      const r = simulate({ workload, cluster, policy: createPolicy(name) });
      assert.deepEqual(
        r.run.jobs.map((j) => j.state),
        ['succeeded', 'succeeded', 'succeeded'],
        name,
      );
      // job_9 starts only once job_7 has finished.
      assert.ok(r.run.jobs[2]!.submitMs >= r.run.jobs[1]!.finishMs!, name);
    }
  });

  test('a trace as DSS writes it is read unedited: job.end.ms before job.start.ms, am.type generic', () => {
    // DSS's trace generator writes "job.end.ms": 200000 for every job, and "generic" application masters.
    const trace =
      '{"am.type": "generic", "job.id": "job_1", "job.start.ms": 250000, "job.end.ms": 200000, "job.tasks": ' +
      '[{"c.nr": 2, "c.dur": 1000, "c.mem": 500, "c.prio": 20, "c.type": "MAP"}]}\n' +
      '{"am.type": "mapreduce", "job.id": "job_2", "job.start.ms": 0, "job.end.ms": 200000, "job.tasks": ' +
      '[{"c.nr": 1, "c.dur": 3000, "c.mem": 800, "c.prio": 20, "c.type": "MAP"}]}';
    const w = readWorkloadFile(trace, 'dss-generated.json');
    assert.deepEqual(
      w.jobs.map((j) => [j.name, j.submitMs, j.maps.length]),
      [
        ['job_2', 0, 1],
        ['job_1', 250000, 2],
      ],
    );
    assert.throws(
      () => readWorkloadFile(trace.replace('"generic"', '"spark"'), 'other.json'),
      (err: unknown) => err instanceof MinimrError && err.details?.field === 'am.type' && /generic/.test(err.message),
    );
  });

  test("--penalty: DSS's command-line model for task groups that name none (PEEK STEP 3 is step:3)", () => {
    const trace =
      '{"job.id": "j", "job.start.ms": 0, "job.tasks": [' +
      '{"c.nr": 1, "c.dur": 10, "c.mem": 100, "c.prio": 20, "c.type": "MAP"}, ' +
      '{"c.nr": 1, "c.dur": 10, "c.mem": 100, "c.prio": 10, "c.type": "REDUCE", "c.penalty": "POWER1", "c.ib": 1}]}';
    const w = readWorkloadFile(trace, 'p.json', { defaultPenalty: parseDssPenalty('step:3') });
    // The group without a model takes STEP with initial bump 3; the one that names POWER1 keeps it.
    assert.deepEqual(w.jobs[0]!.maps[0]!.penalty, { kind: 'step', factor: 3, minFraction: 0.1 });
    assert.equal(w.jobs[0]!.reduces[0]!.penalty?.kind, 'power');
    assert.equal(readWorkloadFile(trace, 'p.json').jobs[0]!.maps[0]!.penalty, undefined, 'no --penalty: none');
    assert.deepEqual(parseDssPenalty('SQRT'), { model: 'SQUAREROOT', ib: 1 });
    for (const [text, words] of [
      ['sawtooth:2', 'SAWTOOTH is not modelled'],
      ['step:0.5', 'must be a number >= 1'],
      ['step:x', 'must be a number >= 1'],
    ] as const)
      assert.throws(
        () => parseDssPenalty(text),
        (err: unknown) => err instanceof MinimrError && err.code === 'EBADCONF' && err.message.includes(words),
        text,
      );
  });

  test('--penalty with a workload that is not a DSS trace is EBADCONF, not silently unused', async () => {
    await assert.rejects(
      loadWorkload('hvw', { penalty: 'step:3' }),
      (err: unknown) => err instanceof MinimrError && err.code === 'EBADCONF' && /not one/.test(err.message),
    );
  });

  test('a bad field is EBADCONF naming it', () => {
    const withTask = (task: string, start = '0') =>
      `{"job.id": "job_1", "job.start.ms": ${start}, "job.end.ms": 1000, "job.tasks": [${task}]}`;
    const ok = '"c.nr": 1, "c.dur": 10, "c.mem": 100, "c.prio": 20, "c.type": "MAP"';
    for (const [trace, field, words] of [
      [withTask(`{${ok.replace('"c.nr": 1', '"c.nr": 0')}}`), 'c.nr', 'whole number'],
      [withTask(`{${ok.replace('"c.dur": 10', '"c.dur": -1')}}`), 'c.dur', 'ms'],
      [withTask(`{${ok.replace('"c.mem": 100', '"c.mem": "1g"')}}`), 'c.mem', 'MB'],
      [withTask(`{${ok}, "c.cores": 2}`), 'c.cores', 'one slot'],
      [withTask(`{${ok.replace('"MAP"', '"MRAM"')}}`), 'c.type', 'application masters'],
      [withTask(`{${ok}, "c.penalty": "SAWTOOTH", "c.ib": 2}`), 'c.penalty', 'unknown penalty model "SAWTOOTH"'],
      [withTask(`{${ok}, "c.penalty": "STEP"}`), 'c.ib', 'initial bump'],
      [withTask(`{${ok}, "c.ib": 2}`), 'c.penalty', 'a penalty model'],
      [withTask(`{${ok}}`, '"job_42"'), 'job.start.ms', 'neither a number of ms nor the id of a job in the trace'],
    ] as const) {
      assert.throws(
        () => readWorkloadFile(trace, 't.json'),
        (err: unknown) =>
          err instanceof MinimrError &&
          err.code === 'EBADCONF' &&
          err.details?.field === field &&
          err.message.includes(words),
        `${field}: ${trace}`,
      );
    }
  });
});
