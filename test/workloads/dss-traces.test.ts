/**
 * DSS's uniform traces as its trace-generator.py writes them. The expected text is the first job
 * of the file DSS's script printed for `100 0 1000 unif 1 200 unif 10 60 unif 1 200 unif 1` (the
 * T200_M6_D200 configuration, seed 1) and `... 1 400 unif 10 100 unif 1 500 unif 1` (T400_M10_D500).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  dssUniformConfiguration,
  dssUniformJobs,
  dssUniformTrace,
  readWorkloadFile,
} from '../../src/workloads/index.js';

const FIRST_JOB_T200_M6_D200 =
  '{\t"am.type" : "mapreduce",\n' +
  '\t"job.start.ms" : 417000,\n' +
  '\t"job.end.ms" : 200000,\n' +
  '\t"job.queue.name" : "sls_queue_1",\n' +
  '\t"job.id" : "job_0",\n' +
  '\t"job.user" : "default",\n' +
  '\t"job.tasks" : [\n' +
  '{"c.host" : "/default-rack/node2354434", "c.dur" : 190000, "c.prio" : 20, "c.mem" : 5000, ' +
  '"c.type" : "reduce", "c.nr" : 66}\n' +
  ']\n' +
  '}\n';

test("a seed's trace starts with the job DSS's generator printed for it", () => {
  const text = dssUniformTrace(dssUniformConfiguration(200, 6, 200, 1));
  assert.equal(text.slice(0, FIRST_JOB_T200_M6_D200.length), FIRST_JOB_T200_M6_D200);
  // The same draws scale with the ranges: T400_M10_D500's job_0 and job_1 from DSS's file.
  const big = dssUniformJobs(dssUniformConfiguration(400, 10, 500, 1));
  assert.deepEqual(big.slice(0, 2), [
    { id: 'job_0', startMs: 417000, tasks: 131, taskMs: 475000, taskMemoryMb: 8300 },
    { id: 'job_1', startMs: 720000, tasks: 211, taskMs: 278000, taskMemoryMb: 8800 },
  ]);
});

test('every job is drawn inside its ranges, truncated to whole units', () => {
  const jobs = dssUniformJobs(dssUniformConfiguration(400, 2, 500, 7));
  assert.equal(jobs.length, 100);
  for (const j of jobs) {
    assert.ok(j.startMs >= 0 && j.startMs < 1_000_000 && j.startMs % 1000 === 0);
    assert.ok(Number.isInteger(j.tasks) && j.tasks >= 1 && j.tasks < 400);
    assert.ok(j.taskMs >= 1000 && j.taskMs < 500_000 && j.taskMs % 1000 === 0);
    assert.ok(j.taskMemoryMb >= 1000 && j.taskMemoryMb < 2000 && j.taskMemoryMb % 100 === 0);
  }
});

test('minimr reads the generated trace as a DSS trace: one reduce group per job, as drawn', () => {
  const options = dssUniformConfiguration(200, 6, 200, 1);
  const drawn = dssUniformJobs(options);
  const workload = readWorkloadFile(dssUniformTrace(options), 'T200_M6_D200.json', {});
  assert.equal(workload.meta?.generator, 'dss');
  assert.equal(workload.jobs.length, 100);
  // minimr numbers jobs in submission order and keeps the trace's id as the name.
  const job0 = workload.jobs.find((j) => j.name === 'job_0')!;
  assert.equal(job0.submitMs, 417000);
  assert.equal(job0.maps.length + job0.reduces.length, 66);
  const task = [...job0.maps, ...job0.reduces][0]!;
  assert.equal(task.memoryMb, drawn[0]!.taskMemoryMb);
});
