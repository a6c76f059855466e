import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bundleModel, DeviceModel, devicePoint, POWER_NA_LINE, quality } from '../src/device';
import type { DeviceSample } from '../src/protocol';

const sample = (n: number, extra: Partial<DeviceSample> = {}): DeviceSample => ({
  file: '/w/net.py', device: 'edge1', address: '10.0.0.2:8443', bundle: '0003-net.mindir', precision: 'fp32',
  backend: 'cellscope-cpu', timeMs: 1.7e12 + 1000 * n, fps: 50 + n, inferences: String(50 * n),
  latencyP50Ms: 1.5, latencyP99Ms: 4, rssMb: 80, cpuPercent: 95, ...extra,
});

test('the device model: samples in order, a reset drops them, the last max kept', () => {
  const m = new DeviceModel();
  assert.equal(m.apply({ reset: true, session: 'w1', device: 'edge1', samples: [sample(1), sample(2)] }), true);
  assert.equal(m.apply({ samples: [sample(3)] }), false);
  assert.deepEqual(m.samples.map((s) => s.fps), [51, 52, 53]);
  assert.equal(m.samples[2].inferences, 150, 'uint64 as a string');
  assert.equal(m.address, '10.0.0.2:8443');
  m.apply({ samples: [sample(4), sample(5)], maxSamples: 3 });
  assert.deepEqual(m.samples.map((s) => s.fps), [53, 54, 55]);
  assert.equal(m.apply({ reset: true, session: 'w2', samples: [sample(9)] }), true);
  assert.deepEqual(m.samples.map((s) => s.fps), [59]);
  assert.equal(m.session, 'w2');
  assert.equal(m.messages, 4);
});

test('the chart data: seconds from the first sample; not measured is a gap (null), never 0', () => {
  const m = new DeviceModel();
  m.apply({ reset: true, samples: [sample(1), sample(2, { latencyP50Ms: undefined, latencyP99Ms: undefined }), sample(4, { powerW: 9.5 })] });
  const d = m.chartData();
  assert.deepEqual(d.x, [0, 1, 3]);
  assert.deepEqual(d.fps, [51, 52, 54]);
  assert.deepEqual(d.p50, [1.5, null, 1.5]);
  assert.deepEqual(d.power, [null, null, 9.5]);
  assert.equal(m.powerNA(), false);
  const na = new DeviceModel();
  na.apply({ reset: true, samples: [sample(1), sample(2)] });
  assert.equal(na.powerNA(), true);
  assert.deepEqual(na.chartData().power, [null, null]);
  assert.match(na.summary(), /power n\/a$/);
  assert.doesNotMatch(na.summary(), /0\.0 W/);
});

test('the texts: summary, figures, quality', () => {
  const m = new DeviceModel();
  assert.match(m.summary(), /Waiting/);
  assert.deepEqual(m.facts(), []);
  m.apply({ reset: true, device: 'edge1', samples: [sample(1, { powerW: 12.25, powerSource: 'rapl package 0' })] });
  assert.equal(m.summary(), 'edge1 · net · 51 FPS · p50 1.50 ms · p99 4.00 ms · RSS 80.0 MB · power 12.3 W');
  const f = Object.fromEntries(m.facts());
  assert.equal(f.device, 'edge1 (10.0.0.2:8443)');
  assert.equal(f.model, 'net (0003-net.mindir)');
  assert.equal(f.precision, 'fp32');
  assert.equal(f.backend, 'cellscope-cpu');
  assert.equal(f.power, '12.3 W (rapl package 0)');
  assert.match(f.quality, /^n\/a \(fp32/);
  const int8 = devicePoint(sample(1, { precision: 'int8', loadTop1Agreement: 1, loadCosine: 0.99995, lastTop1Agreement: 0.75 }));
  assert.equal(quality(int8), 'int8 vs fp32 at load: top-1 agreement 100.0 %, cosine 0.99995; last inference: top-1 agreement 75.0 %, cosine n/a');
  assert.equal(quality(devicePoint(sample(1, { precision: 'int8' }))), 'n/a (not measured)');
  assert.equal(bundleModel('0012-my.net.mindir'), 'my.net');
  assert.equal(bundleModel(''), '');
});

test('marks: stopped / rolled back / disconnected at their time, not points; a reset drops them', () => {
  const m = new DeviceModel();
  const mark = (n: number, event: string): DeviceSample => ({ file: '/w/net.py', device: 'edge1', timeMs: 1.7e12 + 1000 * n, event });
  m.apply({ reset: true, session: 'w1', samples: [sample(1), sample(2)] });
  m.apply({ samples: [mark(3, 'rolled back')] });
  assert.equal(m.samples.length, 2, 'a mark is no point');
  assert.equal(m.ended(), undefined, 'a rollback does not end the watch');
  m.apply({ samples: [sample(4), mark(6, 'stopped'), mark(7, 'exploded'), { event: 'disconnected' }] });
  assert.deepEqual(m.marks.map((k) => k.label), ['rolled back', 'stopped'], 'unknown words and marks without a time are dropped');
  const d = m.chartData();
  assert.deepEqual(d.x, [0, 1, 3]);
  assert.deepEqual(d.marks, [{ x: 2, label: 'rolled back' }, { x: 5, label: 'stopped' }]);
  assert.equal(m.ended()?.label, 'stopped');
  assert.match(m.summary(), / · stopped$/);
  assert.match(Object.fromEntries(m.facts()).watch, /^stopped at \d\d:\d\d:\d\d$/);
  // Telemetry again after the mark (the same watch reconnected): no longer ended.
  m.apply({ samples: [sample(8), mark(9, 'disconnected')] });
  assert.equal(m.ended()?.label, 'disconnected');
  assert.deepEqual(m.chartData().marks.map((k) => k.x), [2, 5, 8]);
  // Marks older than the first kept sample go with it.
  m.apply({ samples: [sample(10)], maxSamples: 2 });
  assert.deepEqual(m.marks.map((k) => k.label), ['disconnected']);
  assert.equal(m.ended(), undefined);
  m.apply({ reset: true, session: 'w2', samples: [sample(20)] });
  assert.deepEqual(m.marks, []);
});

test('power never measured: the chart data says so, the line is the one the dock shows', () => {
  const m = new DeviceModel();
  m.apply({ reset: true, samples: [sample(1), sample(2)] });
  assert.equal(m.powerNA(), true);
  assert.equal(POWER_NA_LINE, 'power: n/a (no npu-smi, RAPL or hwmon reading on the device)');
  m.apply({ samples: [sample(3, { powerW: 0 })] });
  assert.equal(m.powerNA(), false, 'a measured 0 W is a measurement');
  assert.deepEqual(m.chartData().power, [null, null, 0]);
});
