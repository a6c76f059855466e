import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  bundleModel, calibrationDialog, deployArgs, deviceEvent, deviceItem, precisionItems, devicePicks, DeviceRelay, deviceSample, deviceStatusText, deviceStatusTooltip,
  LineSplitter, parseProgressLine, parseTelemetry, progressReport, rollbackArgs, watchArgs,
} from '../../src/deploy';

test('the device pick list: usable entries of mindspore_config.json, the others named', () => {
  const cfg = {
    devices: [
      { name: 'edge1', address: '192.168.1.40:8443', target: 'ascend310', token_file: 'edge1.token' },
      { name: 'lab', address: '[::1]:9000', token_env: 'LAB_TOKEN' },
      { name: 'noport', address: 'host', token_env: 'X' },
      { address: 'h:1', token_env: 'X' },
      { name: 'both', address: 'h:1', token_env: 'X', token_file: 'f' },
      { name: 'edge1', address: 'h:2', token_env: 'X' },
      'not an object',
    ],
  };
  const { devices, problems } = devicePicks(cfg);
  assert.deepEqual(devices, [
    { name: 'edge1', address: '192.168.1.40:8443', target: 'ascend310' },
    { name: 'lab', address: '[::1]:9000', target: 'cpu' },
  ]);
  assert.equal(problems.length, 5);
  assert.match(problems[0], /noport.*HOST:PORT/);
  assert.match(problems[1], /devices\[3\]: no "name"/);
  assert.match(problems[2], /both.*exactly one/);
  assert.match(problems[3], /second device named "edge1"/);
  assert.deepEqual(deviceItem(devices[0]), { label: 'edge1', description: '192.168.1.40:8443 · ascend310', device: devices[0] });
  assert.deepEqual(devicePicks({}), { devices: [], problems: [] });
  assert.deepEqual(devicePicks({ devices: {} }).problems, ['"devices" in mindspore_config.json is not a list']);
  assert.equal(devicePicks([1]).problems.length, 1);
});

test('command lines', () => {
  assert.deepEqual(deployArgs('/m/a.mindir', 'edge1'), ['deploy', '/m/a.mindir', '--device', 'edge1', '--progress', 'json']);
  assert.deepEqual(deployArgs('/m/a.mindir', 'edge1', 'target'),
    ['deploy', '/m/a.mindir', '--device', 'edge1', '--progress', 'json', '--precision', 'target']);
  assert.deepEqual(deployArgs('/m/a.mindir', 'edge1', 'int8', '/d/calib.npy'),
    ['deploy', '/m/a.mindir', '--device', 'edge1', '--progress', 'json', '--precision', 'int8', '--calibration-data', '/d/calib.npy']);
  assert.deepEqual(precisionItems().map((i) => i.label), ['fp32', 'target', 'int8']);
  // int8's data: a .npy (one input) or a .npz (one array per input) is offered, passed as it is.
  assert.deepEqual(calibrationDialog().filters, { NumPy: ['npy', 'npz'] });
  assert.match(calibrationDialog().title, /\.npz of one such array per input/);
  assert.match(precisionItems()[2].detail, /\.npz/);
  assert.deepEqual(deployArgs('/m/two.mindir', 'edge1', 'int8', '/d/calib.npz').slice(-2), ['--calibration-data', '/d/calib.npz']);
  assert.deepEqual(watchArgs('edge1'), ['deploy', '--watch', '--device', 'edge1']);
  assert.deepEqual(rollbackArgs('edge1'), ['deploy', '--rollback', '--device', 'edge1', '--progress', 'json']);
});

test('progress lines of cellscope deploy --progress json', () => {
  assert.deepEqual(parseProgressLine('{"phase":"connect","device":"edge","address":"10.0.0.2:8443"}'),
    { phase: 'connect', device: 'edge', address: '10.0.0.2:8443' });
  const up = parseProgressLine('{"phase":"upload","upload":"ab","chunks_done":3,"chunks_total":9,"bytes_done":3145728,"bytes_total":8912896}');
  assert.deepEqual(up, { phase: 'upload', chunksDone: 3, chunksTotal: 9, bytesDone: 3145728, bytesTotal: 8912896 });
  assert.deepEqual(progressReport(up!), { message: 'uploading: chunk 3/9, 3.0 of 8.5 MiB', percent: 30 });
  assert.equal(progressReport({ phase: 'upload', chunksDone: 0, chunksTotal: 0, bytesDone: 0, bytesTotal: 0 }).percent, 90);
  assert.deepEqual(parseProgressLine('{"phase":"done","device":"edge","bundle":"0002-a.mindir","name":"a.mindir","already_current":false}'),
    { phase: 'done', bundle: '0002-a.mindir', name: 'a.mindir', rollback: false, alreadyCurrent: false });
  assert.deepEqual(parseProgressLine('{"phase":"done","rollback":true,"bundle":"0001-a.mindir"}'),
    { phase: 'done', bundle: '0001-a.mindir', rollback: true, alreadyCurrent: false });
  assert.deepEqual(parseProgressLine('{"phase":"error","code":"load-failed","message":"no MindIR"}'),
    { phase: 'error', code: 'load-failed', message: 'no MindIR' });
  assert.deepEqual(parseProgressLine('{"phase":"commit","upload":"ab"}'), { phase: 'commit' });
  assert.equal(progressReport({ phase: 'commit' }).percent, 90);
  // Not ours: undefined, never a throw.
  for (const bad of ['', 'deployed a to b', '[1]', 'null', '{"phase":"upload","chunks_done":1}', '{"phase":"warp"}', '{"phase":"message"}']) {
    assert.equal(parseProgressLine(bad), undefined, bad);
  }
});

test('telemetry lines and the status text', () => {
  const t = parseTelemetry('{"type":"telemetry","inferences":120,"fps":59.6,"latency_ms":{"p50":1.25,"p99":3.5,"runs":600},'
    + '"rss_mb":88.4,"cpu_percent":97,"power_w":"n/a","bundle":"0003-lenet.mindir","deploying":false}');
  assert.ok(t);
  assert.equal(t.powerW, 'n/a');
  assert.equal(deviceStatusText(bundleModel(t.bundle), 'edge1', t), 'MindSpore: lenet on edge1 — 60 FPS');
  assert.equal(deviceStatusText('lenet', 'edge1'), 'MindSpore: lenet on edge1 — …');
  const tip = deviceStatusTooltip('edge1', t);
  assert.match(tip, /p50 1\.25 ms, p99 3\.50 ms/);
  assert.match(tip, /power n\/a/);
  assert.doesNotMatch(tip, /0\.0 W/);
  const idle = parseTelemetry('{"type":"telemetry","inferences":0,"fps":0,"latency_ms":null,"rss_mb":50,"cpu_percent":0,"power_w":12.5,"bundle":"0001-x.mindir"}');
  assert.equal(idle?.latencyMs, null);
  assert.match(deviceStatusTooltip('e', idle), /no inferences in the last 10 s.*\n.*power 12\.5 W/s);
  assert.equal(parseTelemetry('{"type":"other","fps":1}'), undefined);
  assert.equal(parseTelemetry('not json'), undefined);
  assert.equal(bundleModel('0012-my.net.mindir'), 'my.net');
  assert.equal(bundleModel('weird'), 'weird');
});

test('a telemetry line as the graph view\'s DeviceSample: not measured stays absent, never 0', () => {
  const dev = { name: 'edge1', address: '10.0.0.2:8443', target: 'cpu' };
  const fp32 = parseTelemetry('{"type":"telemetry","inferences":120,"fps":59.6,"latency_ms":{"p50":1.25,"p99":3.5,"runs":600},'
    + '"rss_mb":88.4,"cpu_percent":97,"power_w":"n/a","bundle":"0003-lenet.mindir","deploying":null,"precision":"fp32",'
    + '"backend":"cellscope-cpu","agreement":{"load":"n/a","last_infer":"n/a"}}');
  assert.ok(fp32);
  assert.deepEqual(deviceSample('/w/net.py', dev, fp32, 1700000000123), {
    file: '/w/net.py', device: 'edge1', address: '10.0.0.2:8443', bundle: '0003-lenet.mindir', precision: 'fp32',
    backend: 'cellscope-cpu', timeMs: 1700000000123, fps: 59.6, inferences: 120, rssMb: 88.4, cpuPercent: 97, deploying: '',
    latencyP50Ms: 1.25, latencyP99Ms: 3.5,
  });
  // int8 with its agreement figures, a measured power, no inferences in the last 10 s.
  const int8 = parseTelemetry('{"type":"telemetry","inferences":0,"fps":0,"latency_ms":null,"rss_mb":50,"cpu_percent":1,'
    + '"power_w":12.5,"power_source":"rapl package 0","bundle":"0004-q.mindir","precision":"int8","deploying":"next.mindir",'
    + '"agreement":{"load":{"on":"calibration data","top1_agreement":1,"cosine":0.99995},"last_infer":{"top1_agreement":0.5,"cosine":0.98}}}');
  assert.ok(int8);
  const s = deviceSample('/w/q.mindir', dev, int8, 5);
  assert.equal(s.powerW, 12.5);
  assert.equal(s.powerSource, 'rapl package 0');
  assert.equal(s.latencyP50Ms, undefined);
  assert.equal(s.backend, '', 'an agent that does not say its backend');
  assert.equal(s.deploying, 'next.mindir');
  assert.deepEqual([s.loadTop1Agreement, s.loadCosine, s.lastTop1Agreement, s.lastCosine], [1, 0.99995, 0.5, 0.98]);
});

test('the device relay passes samples on in order, one at a time, and logs a failing streak once', async () => {
  const got: [number, string][] = [];
  const logs: string[] = [];
  let inFlight = 0;
  let fail = false;
  const relay = new DeviceRelay(async (sample, session) => {
    inFlight++;
    assert.equal(inFlight, 1, 'one request at a time');
    await new Promise((r) => setTimeout(r, 1));
    inFlight--;
    if (fail) throw new Error('server gone');
    got.push([sample.fps as number, session]);
  }, (l) => logs.push(l));
  for (let n = 1; n <= 6; n++) relay.push({ fps: n }, 'w1');
  await relay.idle();
  assert.deepEqual(got.map(([f]) => f), [1, 2, 3, 4, 5, 6]);
  assert.ok(got.every(([, s]) => s === 'w1'));
  fail = true;
  for (let n = 7; n <= 9; n++) relay.push({ fps: n }, 'w1');
  await relay.idle();
  assert.equal(logs.length, 1);
  assert.match(logs[0], /cannot pass the telemetry.*server gone/);
  fail = false;
  relay.push({ fps: 10 }, 'w2');
  await relay.idle();
  assert.deepEqual(got[got.length - 1], [10, 'w2']);
  assert.equal(relay.sent, 10);
});

test('the line splitter keeps partial lines', () => {
  const s = new LineSplitter();
  assert.deepEqual(s.push('{"a":1}\n{"b"'), ['{"a":1}']);
  assert.deepEqual(s.push(':2}\r\n\n'), ['{"b":2}']);
  assert.deepEqual(s.push(''), []);
});

test('the Device chart marks: stopped, rolled back, disconnected, with the time and no figures', () => {
  const edge = { name: 'edge1', address: '10.0.0.2:8443', target: 'cpu' };
  for (const kind of ['stopped', 'rolled back', 'disconnected'] as const) {
    assert.deepEqual(deviceEvent('/w/net.py', edge, kind, 1.7e12),
      { file: '/w/net.py', device: 'edge1', address: '10.0.0.2:8443', timeMs: 1.7e12, event: kind });
  }
});
