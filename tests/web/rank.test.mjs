// The overview's ranking and grouping (web/src/rank.js) and the stage bars' parts
// (web/src/stages.js), under node --test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deviation, worstFirst, overviewRows } from '../../web/src/rank.js';
import { breakdown } from '../../web/src/stages.js';

const row = (key, stage, p99, baseline, extra = {}) => ({
  key, id: key, labels: { model: 'text', route: 'models', stage }, p99, baseline_p99: baseline, ...extra,
});

test('deviation is P99 over its baseline, null when either is unknown', () => {
  assert.equal(deviation(row('a', 'total', 0.054, 0.0027)), 20);
  assert.equal(deviation(row('a', 'total', 0.054, null)), null);
  assert.equal(deviation(row('a', 'total', null, 0.01)), null);
  assert.equal(deviation(row('a', 'total', 0.01, 0)), null);
});

test('a stage far from its baseline ranks above healthy rows with a higher anomaly score', () => {
  // The field case: queue at 54 ms against 2.7 ms, inference 49.5 against 1.5, no rule on stages.
  const rows = [
    row('total', 'total', 0.11, 0.1, { anomaly_score: 0.4 }),
    row('queue', 'queue', 0.054, 0.0027, { anomaly_score: 0.1 }),
    row('inference', 'inference', 0.0495, 0.0015, { anomaly_score: 0.05 }),
    row('gateway', 'gateway', 0.0002, 0.0002, { anomaly_score: 0.3 }),
  ].sort(worstFirst);
  assert.deepEqual(rows.map((r) => r.key), ['inference', 'queue', 'total', 'gateway']);
});

test('alert state still comes first, and a collapse counts like a spike', () => {
  const rows = [
    row('far', 'queue', 0.5, 0.01),
    row('alerting', 'total', 0.11, 0.1, { alert_state: 'alert', severity: 'warning' }),
    row('collapsed', 'inference', 0.0001, 0.01),
    row('stored', 'total', 9, 0.1, { live: false }),
  ].sort(worstFirst);
  assert.deepEqual(rows.map((r) => r.key), ['alerting', 'collapsed', 'far', 'stored']);
});

test('per-layer series fold into one row per model, ranked by their worst', () => {
  const series = [
    row('total', 'total', 0.011, 0.01),
    row('l1', 'layer_fc', 0.001, 0.001),
    row('l2', 'layer_encoder_0', 0.02, 0.001),
    { ...row('other', 'layer_fc', 0.001, 0.001), labels: { model: 'risk', route: 'models', stage: 'layer_fc' } },
  ];
  const rows = overviewRows(series);
  assert.equal(rows.length, 3);
  assert.deepEqual(rows[0].group.members.map((s) => s.key), ['l2', 'l1']);
  assert.deepEqual(rows[0].group.labels, { model: 'text', route: 'models' });
  assert.equal(rows[1].series.key, 'total');
  assert.deepEqual(rows[2].group.members.map((s) => s.key), ['other']);
});

test('queue wait is a part of its own in the stage bar', () => {
  const parts = breakdown({
    total: 0.1,
    stages: { gateway: 0.001, upstream: 0.099, queue: 0.054, inference: 0.04, first_token: 0.05 },
  });
  assert.deepEqual(parts.map((p) => p.name), ['gateway', 'queue', 'inference', 'upstream (other)']);
  const sum = parts.reduce((a, p) => a + p.seconds, 0);
  assert.ok(Math.abs(sum - 0.1) < 1e-9, `parts add up to the total: ${sum}`);
});

test('a size or a count does not outrank a latency by its P99 alone', () => {
  // No baseline yet, no score: only the P99 is left, and 4096 bytes are not worse than 20 ms.
  const rows = [
    row('size', 'total', 4096, null, { unit: 'bytes' }),
    row('latency', 'total', 0.02, null, { unit: 'seconds' }),
    row('old', 'total', 0.01, null),
  ].sort(worstFirst);
  assert.deepEqual(rows.map((r) => r.key), ['latency', 'old', 'size']);
});
