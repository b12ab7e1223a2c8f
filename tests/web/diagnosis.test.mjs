// The diagnosis panel's arithmetic (web/src/diagnosis.js), under node --test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { median, layerMatrix, inputDrift, episodeWindow, stepFor } from '../../web/src/diagnosis.js';

test('median of the finite values, null when there are none', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([NaN, null, 5]), 5);
  assert.equal(median([]), null);
});

test('the layer heatmap is each layer over its own baseline, the one that moved on top', () => {
  const t = (i) => 1000 * i;
  // fc1 is 20 us and doubles after the onset at t=3; fc2 is 5 ms and stays; conv has no point
  // before the onset (no baseline: left out).
  const layers = [
    { name: 'fc1', points: [0, 1, 2, 3, 4].map((i) => ({ t: t(i), p99: i >= 3 ? 40e-6 : 20e-6 })) },
    { name: 'fc2', points: [0, 1, 2, 3, 4].map((i) => ({ t: t(i), p99: 5e-3 })) },
    { name: 'conv', points: [3, 4].map((i) => ({ t: t(i), p99: 1e-3 })) },
  ];
  const m = layerMatrix(layers, t(3));
  assert.deepEqual(m.times, [0, 1000, 2000, 3000, 4000]);
  // ECharts draws the first category at the bottom: the worst layer last.
  assert.deepEqual(m.names, ['fc2', 'fc1']);
  assert.deepEqual(m.worst, { name: 'fc1', ratio: 2 });
  const fc1 = m.cells.filter((c) => c[1] === 1);
  assert.deepEqual(fc1.map((c) => c[2]), [1, 1, 1, 2, 2]);
  assert.equal(fc1[4][3], 40e-6, 'the cell keeps the P99 itself for the tooltip');
  assert.ok(m.cells.filter((c) => c[1] === 0).every((c) => c[2] === 1));
});

test('missing points leave holes, not zeros', () => {
  const m = layerMatrix([{ name: 'a', points: [{ t: 0, p99: 1 }, { t: 1, p99: null }, { t: 2, p99: 3 }] }], 2);
  assert.deepEqual(m.cells.map((c) => c[0]), [0, 2]);
  assert.equal(layerMatrix([], 0).worst, null);
});

test('input drift: the baseline before the onset against the largest since', () => {
  const pts = [
    { t: 0, p50: 32, p99: 40 }, { t: 1, p50: 32, p99: 44 }, { t: 2, p50: 30, p99: 42 },
    { t: 3, p50: 512, p99: 520 }, { t: 4, p50: 500, p99: 530 },
  ];
  const d = inputDrift(pts, 3);
  assert.equal(d.baseline_p50, 32);
  assert.equal(d.baseline_p99, 42);
  assert.equal(d.peak_p50, 512);
  assert.equal(d.peak_p99, 530);
  assert.equal(d.ratio_p50, 16);
  assert.equal(inputDrift(pts, 0), null, 'no point before the onset: no baseline');
});

test('the window: ten minutes before the start to five after the end, or now', () => {
  const now = Date.parse('2026-12-03T12:00:00Z');
  const open = episodeWindow({ started_at: '2026-12-03T11:58:00Z', ended_at: null }, now);
  assert.equal(open.fromMs, Date.parse('2026-12-03T11:48:00Z'));
  assert.equal(open.toMs, now);
  const closed = episodeWindow({ started_at: '2026-12-03T10:00:00Z', ended_at: '2026-12-03T10:02:00Z' }, now);
  assert.equal(closed.toMs, Date.parse('2026-12-03T10:07:00Z'));
  assert.equal(stepFor(0, 1200e3), '10s');
  assert.equal(stepFor(0, 30e3), '1s');
});
