import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { MinimrError } from '../../src/errors.js';
import { FifoPolicy } from '../../src/scheduler/index.js';
import { simulate } from '../../src/sim/index.js';
import {
  clusterFromRumenTrace,
  loadWorkload,
  parseRumenTrace,
  parseSlsNodes,
  readWorkloadFile,
} from '../../src/workloads/index.js';

type Json = Record<string, unknown>;

const JOB_ID = 'job_1369942127770_1205';
const MAP0 = 'task_1369942127770_1205_m_000000';
const MAP1 = 'task_1369942127770_1205_m_000001';
const REDUCE0 = 'task_1369942127770_1205_r_000000';

/**
 * One job as Rumen's TraceBuilder writes it (after Hadoop's 2jobs2min-rumen-jh.json, counters
 * trimmed): 2 maps and 1 reduce; the second map failed once on a2115 and then ran on a2117, and
 * its split lived on a2115 and a2118.
 */
function rumenJob(): Json {
  return {
    priority: 'NORMAL',
    jobID: JOB_ID,
    user: 'jenkins',
    jobName: 'word count',
    submitTime: 1371222054499,
    launchTime: 1371222055000,
    finishTime: 1371222153874,
    queue: 'sls_queue_1',
    mapTasks: [
      {
        startTime: 1371222059053,
        taskID: MAP0,
        taskType: 'MAP',
        finishTime: 1371222078206,
        attempts: [
          {
            location: { layers: ['default-rack', 'a2118.smile.com'] },
            hostName: '/default-rack/a2118.smile.com',
            startTime: 1371222061163,
            result: 'SUCCESS',
            finishTime: 1371222078206,
            attemptID: 'attempt_1369942127770_1205_m_000000_0',
            shuffleFinished: -1,
            sortFinished: -1,
            hdfsBytesRead: 134217728,
            mapInputBytes: -1,
          },
        ],
        preferredLocations: [],
        taskStatus: 'SUCCESS',
        inputBytes: 134217728,
        inputRecords: 4166667,
        outputBytes: 72234,
        outputRecords: 4166667,
      },
      {
        startTime: 1371222059055,
        taskID: MAP1,
        taskType: 'MAP',
        finishTime: 1371222090500,
        attempts: [
          {
            hostName: '/rack2/a2115.smile.com',
            startTime: 1371222061164,
            result: 'FAILED',
            finishTime: 1371222070000,
            attemptID: 'attempt_1369942127770_1205_m_000001_0',
          },
          {
            hostName: '/default-rack/a2117.smile.com',
            startTime: 1371222071000,
            result: 'SUCCESS',
            finishTime: 1371222090500,
            attemptID: 'attempt_1369942127770_1205_m_000001_1',
          },
        ],
        preferredLocations: [{ layers: ['rack2', 'a2115.smile.com'] }, { layers: ['default-rack', 'a2118.smile.com'] }],
        taskStatus: 'SUCCESS',
        inputBytes: 100000000,
        outputBytes: -1,
      },
    ],
    reduceTasks: [
      {
        startTime: 1371222091000,
        taskID: REDUCE0,
        taskType: 'REDUCE',
        finishTime: 1371222150000,
        attempts: [
          {
            hostName: '/rack2/a2115.smile.com',
            startTime: 1371222092000,
            result: 'SUCCESS',
            finishTime: 1371222149000,
            attemptID: 'attempt_1369942127770_1205_r_000000_0',
            shuffleFinished: 1371222120000,
            sortFinished: 1371222121000,
          },
        ],
        preferredLocations: [],
        taskStatus: 'SUCCESS',
        inputBytes: 144451,
        outputBytes: 3000,
      },
    ],
    otherTasks: [],
    outcome: 'SUCCESS',
    jobtype: 'JAVA',
    successfulMapAttemptCDFs: [
      // biome-ignore lint/correctness/noPrecisionLoss: Rumen writes Java's Long.MAX_VALUE/MIN_VALUE as these literals
      { maximum: 9223372036854775807, minimum: -9223372036854775808, rankings: [], numberValues: 0 },
    ],
    jobMapMB: 200,
    jobReduceMB: 200,
  };
}

/** Jackson's pretty printer, objects one after another: how TraceBuilder lays a trace out. */
function rumenText(...jobs: Json[]): string {
  return jobs.map((j) => JSON.stringify(j, null, 2).replace(/": /g, '" : ')).join(' ');
}

const NODES = `{ "rack" : "default-rack", "nodes" : [ { "node" : "a2117.smile.com" }, { "node" : "a2118.smile.com" } ] }
{ "rack" : "rack2", "nodes" : [ { "node" : "a2115.smile.com" } ] }`;

describe('Rumen job traces', () => {
  test('a job with 2 maps, 1 reduce and a failed attempt: durations, kinds, replicas, queue and submit time', () => {
    const w = parseRumenTrace(rumenText(rumenJob()));
    assert.equal(w.name, 'rumen');
    assert.deepEqual(w.meta, { generator: 'rumen', jobs: 1, baselineMs: 1371222054499 });
    assert.equal(w.jobs.length, 1);
    const job = w.jobs[0]!;
    assert.deepEqual(
      [job.id, job.name, job.app, job.submitMs, job.pool],
      ['job_0001', JOB_ID, 'rumen', 0, 'sls_queue_1'],
    );
    assert.deepEqual(job.maps, [
      // The one attempt: 1371222078206 - 1371222061163; no preferred locations, so where it ran.
      { workMs: 17043, memoryMb: 1024, inputBytes: 134217728, outputBytes: 72234, replicas: ['a2118.smile.com'] },
      // The successful second attempt only (1371222090500 - 1371222071000); replicas where the
      // split lived, not where the attempt ran; outputBytes -1 is Rumen's "unknown".
      { workMs: 19500, memoryMb: 1024, inputBytes: 100000000, replicas: ['a2115.smile.com', 'a2118.smile.com'] },
    ]);
    assert.deepEqual(job.reduces, [{ workMs: 1371222149000 - 1371222092000, memoryMb: 1024, inputBytes: 0 }]);
  });

  test('jobs are renumbered in submit order and timed from the first submission; an array reads the same', () => {
    const later = {
      ...rumenJob(),
      jobID: 'job_1369942127770_1206',
      submitTime: 1371222159703,
      launchTime: 1371222160000,
      finishTime: 1371222251755,
      queue: 'sls_queue_2',
    };
    const text = rumenText(later, rumenJob());
    const w = parseRumenTrace(text, { name: 'two.json', defaultMemoryMb: 2048 });
    assert.equal(w.name, 'two.json');
    assert.deepEqual(
      w.jobs.map((j) => [j.id, j.name, j.submitMs, j.pool]),
      [
        ['job_0001', JOB_ID, 0, 'sls_queue_1'],
        ['job_0002', 'job_1369942127770_1206', 1371222159703 - 1371222054499, 'sls_queue_2'],
      ],
    );
    assert.ok(w.jobs.every((j) => [...j.maps, ...j.reduces].every((t) => t.memoryMb === 2048)));
    assert.deepEqual(
      parseRumenTrace(JSON.stringify([later, rumenJob()]), { name: 'two.json', defaultMemoryMb: 2048 }),
      w,
    );
  });

  test('clusterFromRumenTrace: one worker per host the attempts and preferred locations name, in its rack', () => {
    const shape = clusterFromRumenTrace(rumenText(rumenJob()), {
      mapSlots: 2,
      reduceSlots: 1,
      memoryMb: 4096,
      diskMBps: 100,
    });
    assert.equal(shape.name, 'rumen-hosts');
    assert.deepEqual(
      shape.workers.map((x) => [x.id, x.rack, x.mapSlots]),
      [
        ['a2115.smile.com', 'rack2', 2],
        ['a2117.smile.com', 'default-rack', 2],
        ['a2118.smile.com', 'default-rack', 2],
      ],
    );
  });

  type Mutation = (job: Json) => void;
  const mapTask = (job: Json, i: number) => (job.mapTasks as Json[])[i]!;
  const mapAttempt = (job: Json, i: number, n: number) => (mapTask(job, i).attempts as Json[])[n]!;
  const cases: Array<[string, Mutation, RegExp, Record<string, string>]> = [
    [
      'submitTime of the wrong type',
      (j) => (j.submitTime = '2013-06-14'),
      /job "job_1369942127770_1205": field "submitTime" must be a time in ms >= 0, got "2013-06-14"/,
      { jobId: JOB_ID, field: 'submitTime' },
    ],
    [
      'negative submitTime',
      (j) => (j.submitTime = -1),
      /job "job_1369942127770_1205": field "submitTime" must be a time in ms >= 0, got -1/,
      { jobId: JOB_ID, field: 'submitTime' },
    ],
    [
      'job finishes before it launches',
      (j) => (j.finishTime = 1371222054999),
      /job "job_1369942127770_1205": field "finishTime" \(1371222054999\) is before "launchTime" \(1371222055000\)/,
      { jobId: JOB_ID, field: 'finishTime' },
    ],
    [
      'queue of the wrong type',
      (j) => (j.queue = 7),
      /job "job_1369942127770_1205": field "queue" must be a non-empty string/,
      { jobId: JOB_ID, field: 'queue' },
    ],
    [
      'mapTasks not an array',
      (j) => (j.mapTasks = {}),
      /job "job_1369942127770_1205": field "mapTasks" must be an array/,
      { jobId: JOB_ID, field: 'mapTasks' },
    ],
    [
      'taskID missing',
      (j) => delete mapTask(j, 1).taskID,
      /job "job_1369942127770_1205": mapTasks entry 2: field "taskID" must be a non-empty string/,
      { jobId: JOB_ID, field: 'taskID' },
    ],
    [
      'unknown task type',
      (j) => (mapTask(j, 0).taskType = 'SETUP'),
      /job "job_1369942127770_1205": task "task_1369942127770_1205_m_000000": field "taskType" must be "MAP" or "REDUCE", got "SETUP"/,
      { jobId: JOB_ID, taskId: MAP0, field: 'taskType' },
    ],
    [
      'a reduce among the maps',
      (j) => (mapTask(j, 0).taskType = 'REDUCE'),
      /task "task_1369942127770_1205_m_000000": field "taskType" is "REDUCE" but the task is listed in "mapTasks"/,
      { jobId: JOB_ID, taskId: MAP0, field: 'taskType' },
    ],
    [
      'inputBytes of the wrong type',
      (j) => (mapTask(j, 1).inputBytes = '100 MB'),
      /task "task_1369942127770_1205_m_000001": field "inputBytes" must be a number of bytes, got "100 MB"/,
      { jobId: JOB_ID, taskId: MAP1, field: 'inputBytes' },
    ],
    [
      'task finishes before it starts',
      (j) => (mapTask(j, 0).finishTime = 1371222059000),
      /task "task_1369942127770_1205_m_000000": field "finishTime" \(1371222059000\) is before "startTime" \(1371222059053\)/,
      { jobId: JOB_ID, taskId: MAP0, field: 'finishTime' },
    ],
    [
      'no attempts',
      (j) => (mapTask(j, 0).attempts = []),
      /task "task_1369942127770_1205_m_000000": field "attempts" must be a non-empty array/,
      { jobId: JOB_ID, taskId: MAP0, field: 'attempts' },
    ],
    [
      'unknown attempt result',
      (j) => (mapAttempt(j, 1, 0).result = 'LOST'),
      /task "task_1369942127770_1205_m_000001": attempt "attempt_1369942127770_1205_m_000001_0": field "result" must be "SUCCESS", "FAILED", "KILLED", got "LOST"/,
      { jobId: JOB_ID, taskId: MAP1, attemptId: 'attempt_1369942127770_1205_m_000001_0', field: 'result' },
    ],
    [
      'negative attempt start',
      (j) => (mapAttempt(j, 0, 0).startTime = -1),
      /task "task_1369942127770_1205_m_000000": attempt "attempt_1369942127770_1205_m_000000_0": field "startTime" must be a time in ms >= 0, got -1/,
      { jobId: JOB_ID, taskId: MAP0, field: 'startTime' },
    ],
    [
      'attempt finishes before it starts',
      (j) => (mapAttempt(j, 1, 1).finishTime = 1371222070999),
      /attempt "attempt_1369942127770_1205_m_000001_1": field "finishTime" \(1371222070999\) is before "startTime" \(1371222071000\)/,
      { jobId: JOB_ID, taskId: MAP1, field: 'finishTime' },
    ],
    [
      'replayed attempt without a host',
      (j) => delete mapAttempt(j, 1, 1).hostName,
      /task "task_1369942127770_1205_m_000001": attempt "attempt_1369942127770_1205_m_000001_1": field "hostName" must look like "\/rack\/host", got undefined/,
      { jobId: JOB_ID, taskId: MAP1, field: 'hostName' },
    ],
    [
      'host without its rack',
      (j) => (mapAttempt(j, 0, 0).hostName = 'a2118.smile.com'),
      /task "task_1369942127770_1205_m_000000": attempt "attempt_1369942127770_1205_m_000000_0": field "hostName" must look like "\/rack\/host", got "a2118.smile.com"/,
      { jobId: JOB_ID, taskId: MAP0, field: 'hostName' },
    ],
    [
      'a host in two racks',
      (j) => (mapAttempt(j, 1, 0).hostName = '/default-rack/a2115.smile.com'),
      /attempt "attempt_1369942127770_1205_m_000001_0": field "hostName" puts host "a2115.smile.com" in rack "default-rack", but elsewhere the trace has it in rack "rack2"/,
      { jobId: JOB_ID, taskId: MAP1, field: 'hostName' },
    ],
    [
      'preferred location without layers',
      (j) => (mapTask(j, 1).preferredLocations = [{ layers: ['a2115.smile.com'] }]),
      /task "task_1369942127770_1205_m_000001": preferredLocations entry 1 must be \{"layers": \[rack, host\]\}/,
      { jobId: JOB_ID, taskId: MAP1, field: 'preferredLocations' },
    ],
    [
      'reduce attempt time of the wrong type',
      (j) => (((j.reduceTasks as Json[])[0]!.attempts as Json[])[0]!.finishTime = '1371222149000'),
      /task "task_1369942127770_1205_r_000000": attempt "attempt_1369942127770_1205_r_000000_0": field "finishTime" must be a time in ms >= 0, got "1371222149000"/,
      { jobId: JOB_ID, taskId: REDUCE0, field: 'finishTime' },
    ],
  ];
  for (const [name, mutate, message, details] of cases) {
    test(`bad trace: ${name} -> EBADCONF naming the job, task and field`, () => {
      const job = rumenJob();
      mutate(job);
      assert.throws(
        () => parseRumenTrace(rumenText(job)),
        (err: unknown) => {
          assert.ok(err instanceof MinimrError, `expected a MinimrError, got ${String(err)}`);
          assert.equal(err.code, 'EBADCONF');
          assert.match(err.message, message);
          for (const [k, v] of Object.entries(details)) assert.equal(err.details[k], v, `details.${k}`);
          return true;
        },
      );
    });
  }

  test('bad trace: a job without jobID is still read as Rumen and named by its place', () => {
    const job = rumenJob();
    delete job.jobID;
    assert.throws(
      () => readWorkloadFile(rumenText(job), 'trace.json'),
      (err: unknown) =>
        err instanceof MinimrError &&
        err.code === 'EBADCONF' &&
        err.details.field === 'jobID' &&
        /trace\.json: job 1: field "jobID" must be a non-empty string, got undefined/.test(err.message),
    );
  });

  test('bad trace: a jobID used twice', () => {
    assert.throws(
      () => parseRumenTrace(rumenText(rumenJob(), rumenJob())),
      (err: unknown) =>
        err instanceof MinimrError &&
        err.code === 'EBADCONF' &&
        /job "job_1369942127770_1205": "jobID" is used twice/.test(err.message),
    );
  });
});

describe('loadWorkload reads Rumen and SLS traces by their shape', () => {
  test('a Rumen trace, an SLS trace, and neither', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'minimr-rumen-'));
    try {
      await writeFile(join(dir, 'rumen.json'), rumenText(rumenJob()));
      await writeFile(
        join(dir, 'sls.json'),
        '{"job.id": "job_1", "job.start.ms": 0, "job.end.ms": 10, ' +
          '"job.tasks": [{"container.host": "/r1/n1", ' +
          '"container.start.ms": 0, "container.end.ms": 10, ' +
          '"container.type": "map"}]}',
      );
      await writeFile(join(dir, 'neither.json'), '{"id": "j1", "tasks": []}');
      const rumen = await loadWorkload(join(dir, 'rumen.json'), {});
      assert.equal(rumen.meta?.generator, 'rumen');
      assert.equal(rumen.jobs[0]!.maps.length, 2);
      const sls = await loadWorkload(join(dir, 'sls.json'), {});
      assert.equal(sls.meta?.generator, 'sls');
      await assert.rejects(
        loadWorkload(join(dir, 'neither.json'), {}),
        (err: unknown) =>
          err instanceof MinimrError &&
          err.code === 'EBADCONF' &&
          /neither\.json: expected a Hadoop SLS job trace .*"job\.id".*, a Hadoop Rumen job trace .*"jobID".* or minimr workload JSON .*; found an object with fields "id", "tasks"/.test(
            err.message,
          ),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('Rumen trace on an SLS node file in the simulator', () => {
  test('under FIFO every job finishes, no sooner than its slowest map and its reduce allow', () => {
    const later = {
      ...rumenJob(),
      jobID: 'job_1369942127770_1206',
      submitTime: 1371222064499,
      launchTime: 1371222065000,
      finishTime: 1371222163874,
    };
    const workload = parseRumenTrace(rumenText(rumenJob(), later));
    const cluster = parseSlsNodes(NODES);
    const r = simulate({ workload, cluster, policy: new FifoPolicy(), heartbeatMs: 1000 });
    assert.equal(r.run.jobs.length, 2);
    for (const j of r.run.jobs) {
      assert.equal(j.state, 'succeeded', `${j.id} did not finish`);
      assert.ok(j.finishMs! >= j.submitMs + 19500 + 57000, `${j.id} finished at ${j.finishMs}`);
    }
  });
});
