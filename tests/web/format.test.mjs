// The dashboard's number formatting (web/src/format.js), under node --test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ms, statValue, localTime, utc, bytes, count, unitOf } from '../../web/src/format.js';

test('microseconds keep the zeros of their integer part', () => {
  // The regression: 610 us showed as "61 us" and 100 us as "1 us".
  assert.equal(ms(610e-6), '610 µs');
  assert.equal(ms(100e-6), '100 µs');
  assert.equal(ms(216e-6), '216 µs');
  assert.equal(ms(12.34e-6), '12.3 µs');
  assert.equal(ms(10e-6), '10 µs');
  assert.equal(ms(0.5e-6), '0.5 µs');
  assert.equal(ms(999.5e-6), '1.00 ms');
});

test('milliseconds and seconds', () => {
  assert.equal(ms(0), '0 ms');
  assert.equal(ms(1.2e-3), '1.20 ms');
  assert.equal(ms(12.345e-3), '12.3 ms');
  assert.equal(ms(120e-3), '120 ms');
  assert.equal(ms(1.5), '1.50 s');
  assert.equal(ms(12), '12.0 s');
  assert.equal(ms(null), '–');
  assert.equal(ms(NaN), '–');
});

test('each statistic in its own unit', () => {
  assert.equal(statValue('p99', 0.438), '438 ms');
  assert.equal(statValue('p99.9', 610e-6), '610 µs');
  assert.equal(statValue('anomaly_score', 0.438), '0.44');
  assert.equal(statValue('error_ratio', 0.05), '5.0 %');
  assert.equal(statValue('rate', 12.5), '12.5 req/s');
  assert.equal(statValue('rate', 0), '0.00 req/s');
  assert.equal(statValue('rate', null), '–');
});

test('times carry their date and zone', () => {
  // web.unit runs with TZ=Asia/Shanghai (tests/CMakeLists.txt): the browser's zone, shown.
  const t = Date.parse('2026-12-02T04:32:29Z');
  const text = localTime(t);
  assert.match(text, /12:32:29/, text);
  assert.match(text, /GMT\+8|CST/, text);
  assert.match(text, /Dec|12/, text);
  assert.equal(utc(t), '2026-12-02 04:32:29 UTC');
});

test('sizes and counts in their own unit', () => {
  assert.equal(bytes(512), '512 B');
  assert.equal(bytes(1536), '1.50 KiB');
  assert.equal(bytes(12.3 * 1024 * 1024), '12.3 MiB');
  assert.equal(count(7), '7');
  assert.equal(count(2.5), '2.50');
  assert.equal(count(1500), '1.50k');
  assert.equal(count(null), '–');
  // A series says what it measures; latencies are the default (and what older answers meant).
  assert.equal(unitOf({ unit: 'bytes' }).fmt(4096), '4.00 KiB');
  assert.equal(unitOf({ unit: 'count' }).fmt(32), '32');
  assert.equal(unitOf({ unit: 'seconds' }).fmt(0.012), '12.0 ms');
  assert.equal(unitOf({}).fmt(0.012), '12.0 ms');
  assert.equal(unitOf({ unit: 'seconds' }).scale, 1000);
  assert.equal(unitOf({ unit: 'bytes' }).scale, 1);
  // An alert's value on a size reads as a size.
  assert.equal(statValue('p99', 20480, 'bytes'), '20.0 KiB');
  assert.equal(statValue('p99', 0.438, 'seconds'), '438 ms');
  assert.equal(statValue('rate', 12.5, 'count'), '12.5 /s');
});
