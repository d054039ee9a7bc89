import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { formatPrometheus, Histogram } from '../../src/runtime/jobtracker/prometheus.js';
import { appModule, makeText, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { parsePrometheusText, sampleValue } from '../helpers/prometheus.js';

describe('the Prometheus text format', () => {
  it('escapes label values and help so that a strict parser reads them back', () => {
    const text = formatPrometheus([
      {
        name: 'x_total',
        help: 'a \\ help\nline',
        type: 'counter',
        samples: [{ labels: { worker: 'a"b\\c\nd' }, value: 3 }],
      },
      {
        name: 'h_seconds',
        help: 'h',
        type: 'histogram',
        samples: (() => {
          const h = new Histogram([1, 2]);
          h.observe(0.5);
          h.observe(1.5);
          h.observe(9);
          return h.samples({ w: 'x' });
        })(),
      },
    ]);
    const parsed = parsePrometheusText(text);
    assert.equal(parsed.get('x_total')!.help, 'a \\ help\nline');
    assert.equal(sampleValue(parsed, 'x_total', { worker: 'a"b\\c\nd' }), 3);
    assert.deepEqual(
      parsed
        .get('h_seconds')!
        .samples.filter((s) => s.name === 'h_seconds_bucket')
        .map((s) => [s.labels.le, s.value]),
      [
        ['1', 1],
        ['2', 2],
        ['+Inf', 3],
      ],
    );
    assert.equal(sampleValue(parsed, 'h_seconds_sum'), 11);
  });

  it('the strict parser refuses what Prometheus refuses', () => {
    assert.throws(() => parsePrometheusText('x 1\n'), /before any TYPE/);
    assert.throws(() => parsePrometheusText('# TYPE x gauge\nx{a="\\q"} 1\n'), /bad escape/);
    assert.throws(() => parsePrometheusText('# TYPE x gauge\nx 1\nx 2\n'), /duplicate/);
    assert.throws(
      () => parsePrometheusText('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'),
      /cumulative/,
    );
  });
});

describe('/metrics of a real cluster', () => {
  let t: TestCluster;
  const text = makeText(300_000, 7);

  before(async () => {
    t = await startTestCluster();
    await t.fs.put(Buffer.from(text), '/in/text.txt');
  });
  after(async () => {
    await t?.stop();
  });

  it('counts what the job did, as its attempts and the block store say', async () => {
    const status = await t.cluster.client.run(appModule('wordcount'), {
      input: ['/in/text.txt'],
      output: '/out/wc',
      reducers: 2,
    });
    assert.equal(status.state, 'succeeded');
    const attempts = await t.cluster.client.attempts(status.jobId);
    const res = await fetch(`http://127.0.0.1:${t.cluster.jobTracker.port}/metrics`, {
      headers: {
        authorization: `Basic ${Buffer.from(`prometheus:${t.cluster.jobTracker.webPassword}`).toString('base64')}`,
      },
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const m = parsePrometheusText(await res.text());
    for (const f of m.values()) assert.ok(f.help.length > 0 && f.type !== 'untyped', `${f.name} has HELP and TYPE`);
    assert.equal(sampleValue(m, 'minimr_workers'), 3);
    assert.equal(sampleValue(m, 'minimr_slots', { kind: 'map' }), 6);
    assert.equal(sampleValue(m, 'minimr_slots', { kind: 'reduce' }), 3);
    assert.equal(sampleValue(m, 'minimr_slots_busy', { kind: 'map' }), 0);
    assert.equal(sampleValue(m, 'minimr_memory_granted_bytes', { grant: 'regular' }), 0);
    assert.equal(sampleValue(m, 'minimr_jobs_submitted_total'), 1);
    assert.equal(sampleValue(m, 'minimr_jobs_ended_total', { state: 'succeeded' }), 1);
    assert.equal(sampleValue(m, 'minimr_jobs', { state: 'succeeded' }), 1);
    for (const kind of ['map', 'reduce'] as const) {
      const mine = attempts.filter((a) => a.kind === kind);
      assert.equal(sampleValue(m, 'minimr_attempts_launched_total', { kind }), mine.length);
      assert.equal(
        sampleValue(m, 'minimr_attempts_ended_total', { kind, state: 'succeeded' }),
        mine.filter((a) => a.state === 'succeeded').length,
      );
    }
    const sum = (counter: string) => attempts.reduce((s, a) => s + (a.counters[counter] ?? 0), 0);
    assert.equal(
      sampleValue(m, 'minimr_shuffle_bytes_total', { locality: 'local' }) +
        sampleValue(m, 'minimr_shuffle_bytes_total', { locality: 'remote' }),
      sum('SHUFFLE_BYTES_LOCAL') + sum('SHUFFLE_BYTES_REMOTE'),
    );
    assert.ok(sum('SHUFFLE_BYTES_LOCAL') + sum('SHUFFLE_BYTES_REMOTE') > 0);
    assert.equal(sampleValue(m, 'minimr_spills_total'), sum('SPILLS'));
    assert.ok(sampleValue(m, 'minimr_heartbeat_gap_seconds_count') > 0, 'heartbeats observed');
    const files = (await t.fs.list('/out/wc')).concat(await t.fs.list('/in'));
    assert.equal(sampleValue(m, 'minimr_blockstore_files'), files.filter((f) => f.type === 'file').length);
    assert.equal(
      sampleValue(m, 'minimr_blockstore_bytes'),
      files.reduce((s, f) => s + f.length, 0),
    );
  });
});
