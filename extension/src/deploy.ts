// "MindSpore: Deploy to Ascend Device": the pure parts (no `vscode` import, unit-tested). The
// devices of mindspore_config.json, the command lines of `cellscope deploy`, its `--progress json`
// lines and `--watch` telemetry lines (docs/deploy.md), and the status bar text. extension.ts
// spawns the processes and shows the notification, the QuickPick, the status item and the log.

/** A device of mindspore_config.json's `devices` (docs/deploy.md, "Configuring devices"). */
export interface DevicePick {
  name: string;
  address: string;
  target: string;
}

/** The usable devices of a parsed mindspore_config.json and what is wrong with the others (the
 * CLI skips the same entries: `name` and `address` HOST:PORT required, exactly one of
 * `token_file` / `token_env`). */
export function devicePicks(config: unknown): { devices: DevicePick[]; problems: string[] } {
  const devices: DevicePick[] = [];
  const problems: string[] = [];
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    return { devices, problems: ['mindspore_config.json does not hold a JSON object'] };
  }
  const list = (config as Record<string, unknown>).devices;
  if (list === undefined) return { devices, problems };
  if (!Array.isArray(list)) return { devices, problems: ['"devices" in mindspore_config.json is not a list'] };
  list.forEach((d: unknown, i) => {
    const o = (typeof d === 'object' && d !== null ? d : {}) as Record<string, unknown>;
    const where = `devices[${i}]`;
    if (typeof o.name !== 'string' || o.name === '') {
      problems.push(`${where}: no "name"`);
      return;
    }
    if (typeof o.address !== 'string' || !/^.+:\d+$/.test(o.address)) {
      problems.push(`${where} (${o.name}): "address" must be HOST:PORT`);
      return;
    }
    if ((typeof o.token_file === 'string') === (typeof o.token_env === 'string')) {
      problems.push(`${where} (${o.name}): give exactly one of "token_file" or "token_env"`);
      return;
    }
    if (devices.some((x) => x.name === o.name)) {
      problems.push(`${where}: a second device named "${o.name}"`);
      return;
    }
    devices.push({ name: o.name, address: o.address, target: typeof o.target === 'string' ? o.target : 'cpu' });
  });
  return { devices, problems };
}

/** A QuickPick item of a device. */
export function deviceItem(d: DevicePick): { label: string; description: string; device: DevicePick } {
  return { label: d.name, description: `${d.address} · ${d.target}`, device: d };
}

/** The bundle the device builds (`cellscope deploy --precision`, docs/deploy.md). */
export type DeployPrecision = 'fp32' | 'target' | 'int8';

/** The precision QuickPick's items, fp32 first (the default). int8 needs calibration data (a .npy
 * or .npz of inputs, chosen next); target measures its quality on seeded inputs when given none. */
export function precisionItems(): { label: DeployPrecision; description: string; detail: string }[] {
  return [
    { label: 'fp32', description: 'as exported', detail: 'The MindIR runs as it is.' },
    { label: 'target', description: 'fp16 between operators, fp32 accumulation',
      detail: "As the target computes; its agreement with fp32 is measured on the device." },
    { label: 'int8', description: 'quantised on the device from calibration data',
      detail: 'Per-channel weights, per-tensor activations; choose a .npy (or, several inputs, a .npz) of N inputs next.' },
  ];
}

/** The file dialog of int8's calibration data: a .npy of N inputs for a model of one input, or a
 * .npz of one such array per input (named after the inputs, or in their order: np.savez). */
export function calibrationDialog(): { title: string; filters: Record<string, string[]> } {
  return {
    title: 'MindSpore: calibration data for int8 (a .npy of N inputs: N, then the input shape after its batch axis; '
      + 'several inputs: a .npz of one such array per input, named after the inputs)',
    filters: { NumPy: ['npy', 'npz'] },
  };
}

export function deployArgs(model: string, device: string, precision: DeployPrecision = 'fp32',
  calibrationData?: string): string[] {
  const args = ['deploy', model, '--device', device, '--progress', 'json'];
  if (precision !== 'fp32') args.push('--precision', precision);
  if (calibrationData) args.push('--calibration-data', calibrationData);
  return args;
}
export function watchArgs(device: string): string[] {
  return ['deploy', '--watch', '--device', device];
}
export function rollbackArgs(device: string): string[] {
  return ['deploy', '--rollback', '--device', device, '--progress', 'json'];
}

/** A `--progress json` line (docs/deploy.md: the phases). */
export type DeployEvent =
  | { phase: 'export'; file: string }
  | { phase: 'connect'; device: string; address: string }
  | { phase: 'upload'; chunksDone: number; chunksTotal: number; bytesDone: number; bytesTotal: number }
  | { phase: 'commit' }
  | { phase: 'message'; message: string }
  | { phase: 'done'; bundle: string; name?: string; rollback: boolean; alreadyCurrent: boolean }
  | { phase: 'error'; code: string; message: string };

/** A line of `cellscope deploy --progress json`, or undefined for anything else (not JSON, an
 * unknown phase, missing fields). */
export function parseProgressLine(line: string): DeployEvent | undefined {
  let j: unknown;
  try {
    j = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof j !== 'object' || j === null) return undefined;
  const o = j as Record<string, unknown>;
  const str = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : undefined);
  const num = (k: string) => (typeof o[k] === 'number' && Number.isFinite(o[k]) ? (o[k] as number) : undefined);
  switch (o.phase) {
    case 'export': return { phase: 'export', file: str('file') ?? '' };
    case 'connect': return { phase: 'connect', device: str('device') ?? '', address: str('address') ?? '' };
    case 'upload': {
      const [cd, ct, bd, bt] = [num('chunks_done'), num('chunks_total'), num('bytes_done'), num('bytes_total')];
      if (cd === undefined || ct === undefined || bd === undefined || bt === undefined) return undefined;
      return { phase: 'upload', chunksDone: cd, chunksTotal: ct, bytesDone: bd, bytesTotal: bt };
    }
    case 'commit': return { phase: 'commit' };
    case 'message': return str('message') !== undefined ? { phase: 'message', message: str('message') as string } : undefined;
    case 'done': {
      const e: DeployEvent = { phase: 'done', bundle: str('bundle') ?? '', rollback: o.rollback === true, alreadyCurrent: o.already_current === true };
      if (str('name') !== undefined) e.name = str('name');
      return e;
    }
    case 'error': return { phase: 'error', code: str('code') ?? 'error', message: str('message') ?? 'the deployment failed' };
    default: return undefined;
  }
}

function mib(bytes: number): string {
  return (bytes / (1024 * 1024)).toFixed(1);
}

/** What the progress notification shows for an event: its message, and the upload's share of the
 * bar in percent (0..90; the commit takes the rest). */
export function progressReport(e: DeployEvent): { message?: string; percent?: number } {
  switch (e.phase) {
    case 'export': return { message: 'exporting the model…' };
    case 'connect': return { message: `connecting to ${e.device} (${e.address})…` };
    case 'upload': {
      const share = e.chunksTotal > 0 ? e.chunksDone / e.chunksTotal : 1;
      return {
        message: `uploading: chunk ${e.chunksDone}/${e.chunksTotal}, ${mib(e.bytesDone)} of ${mib(e.bytesTotal)} MiB`,
        percent: Math.round(90 * share),
      };
    }
    case 'commit': return { message: 'the device checks, loads and switches to the model…', percent: 90 };
    case 'done': return { message: 'done', percent: 100 };
    default: return {};
  }
}

/** A `--watch` line: the agent's telemetry message (docs/deploy.md, "Stream"). power_w is a
 * number or "n/a" (kept as such: never shown as 0); the int8 agreement figures are undefined when
 * the agent says "n/a" (an fp32 model). */
export interface Telemetry {
  fps: number;
  inferences: number;
  latencyMs: { p50: number; p99: number } | null;
  rssMb: number;
  cpuPercent: number;
  powerW: number | 'n/a';
  powerSource: string;
  bundle: string;
  precision: string;
  backend: string;
  deploying: string;
  load?: { top1?: number; cosine?: number };
  lastInfer?: { top1?: number; cosine?: number };
}

export function parseTelemetry(line: string): Telemetry | undefined {
  let j: unknown;
  try {
    j = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof j !== 'object' || j === null) return undefined;
  const o = j as Record<string, unknown>;
  if (o.type !== 'telemetry' || typeof o.fps !== 'number') return undefined;
  const lat = o.latency_ms as Record<string, unknown> | null | undefined;
  const latencyMs = lat && typeof lat.p50 === 'number' && typeof lat.p99 === 'number' ? { p50: lat.p50, p99: lat.p99 } : null;
  const str = (v: unknown): string => (typeof v === 'string' ? v : '');
  const figures = (v: unknown): { top1?: number; cosine?: number } | undefined => {
    if (typeof v !== 'object' || v === null) return undefined;  // "n/a"
    const a = v as Record<string, unknown>;
    const f: { top1?: number; cosine?: number } = {};
    if (typeof a.top1_agreement === 'number') f.top1 = a.top1_agreement;
    if (typeof a.cosine === 'number') f.cosine = a.cosine;
    return f.top1 === undefined && f.cosine === undefined ? undefined : f;
  };
  const agreement = (typeof o.agreement === 'object' && o.agreement !== null ? o.agreement : {}) as Record<string, unknown>;
  const t: Telemetry = {
    fps: o.fps,
    inferences: typeof o.inferences === 'number' ? o.inferences : 0,
    latencyMs,
    rssMb: typeof o.rss_mb === 'number' ? o.rss_mb : 0,
    cpuPercent: typeof o.cpu_percent === 'number' ? o.cpu_percent : 0,
    powerW: typeof o.power_w === 'number' && Number.isFinite(o.power_w) ? o.power_w : 'n/a',
    powerSource: str(o.power_source),
    bundle: str(o.bundle),
    precision: str(o.precision),
    backend: str(o.backend),
    deploying: str(o.deploying),
  };
  const load = figures(agreement.load);
  const last = figures(agreement.last_infer);
  if (load) t.load = load;
  if (last) t.lastInfer = last;
  return t;
}

/** The graph view's sample of a telemetry line (view.proto's DeviceSample in its JSON form) for
 * the model deployed from `file`: what `cellscope.deviceTelemetry` takes. Not measured stays
 * absent (power "n/a", latency without inferences, the int8 figures of an fp32 model). */
export function deviceSample(file: string, device: DevicePick, t: Telemetry, timeMs: number): Record<string, unknown> {
  const s: Record<string, unknown> = {
    file, device: device.name, address: device.address, bundle: t.bundle, precision: t.precision, backend: t.backend,
    timeMs, fps: t.fps, inferences: t.inferences, rssMb: t.rssMb, cpuPercent: t.cpuPercent, deploying: t.deploying,
  };
  if (t.latencyMs) {
    s.latencyP50Ms = t.latencyMs.p50;
    s.latencyP99Ms = t.latencyMs.p99;
  }
  if (t.powerW !== 'n/a') {
    s.powerW = t.powerW;
    if (t.powerSource) s.powerSource = t.powerSource;
  }
  if (t.load?.top1 !== undefined) s.loadTop1Agreement = t.load.top1;
  if (t.load?.cosine !== undefined) s.loadCosine = t.load.cosine;
  if (t.lastInfer?.top1 !== undefined) s.lastTop1Agreement = t.lastInfer.top1;
  if (t.lastInfer?.cosine !== undefined) s.lastCosine = t.lastInfer.cosine;
  return s;
}

/** Where a watch ended, or a rollback happened: the mark the graph view's Device chart draws. */
export type DeviceEventKind = 'stopped' | 'rolled back' | 'disconnected';

/** A mark for the views of `file` (view.proto's DeviceSample with `event`: no figures, a time). */
export function deviceEvent(file: string, device: DevicePick, event: DeviceEventKind, timeMs: number): Record<string, unknown> {
  return { file, device: device.name, address: device.address, timeMs, event };
}

export type DeviceSender = (sample: Record<string, unknown>, session: string) => Promise<unknown> | unknown;

/** Passes a watch's samples to the language server (`cellscope.deviceTelemetry`), in order: one
 * request at a time. A failure is logged once per failing streak (a watch of an hour must not
 * write 3,600 lines); the watch goes on. */
export class DeviceRelay {
  private chain: Promise<void> = Promise.resolve();
  private failed = false;
  /** Samples passed on so far (tests and logs). */
  sent = 0;

  constructor(private readonly send: DeviceSender, private readonly log?: (line: string) => void) {}

  push(sample: Record<string, unknown>, session: string): void {
    this.chain = this.chain.then(async () => {
      try {
        this.sent++;
        await this.send(sample, session);
        this.failed = false;
      } catch (e) {
        if (!this.failed) this.log?.(`device: cannot pass the telemetry to the graph view: ${e instanceof Error ? e.message : String(e)}`);
        this.failed = true;
      }
    });
  }

  /** Resolves once every sample passed on so far was handled. */
  idle(): Promise<void> { return this.chain; }
}

/** The model's name shown for a bundle `NNNN-name.mindir`. */
export function bundleModel(bundle: string): string {
  const m = /^\d+-(.+?)(\.mindir)?$/.exec(bundle);
  return m ? m[1] : bundle;
}

/** The status bar text: "MindSpore: <model> on <device> — N FPS" (no telemetry yet: "…"). */
export function deviceStatusText(model: string, device: string, t?: Telemetry): string {
  const fps = t === undefined ? '…' : `${Math.round(t.fps)} FPS`;
  return `MindSpore: ${model} on ${device} — ${fps}`;
}

/** Its tooltip: latency, memory, power ("n/a" when the device cannot measure it). */
export function deviceStatusTooltip(device: string, t?: Telemetry): string {
  if (t === undefined) return `${device}: waiting for its telemetry`;
  const lat = t.latencyMs ? `p50 ${t.latencyMs.p50.toFixed(2)} ms, p99 ${t.latencyMs.p99.toFixed(2)} ms` : 'no inferences in the last 10 s';
  const power = t.powerW === 'n/a' ? 'n/a' : `${t.powerW.toFixed(1)} W`;
  return `${device} serving ${t.bundle}\nlatency ${lat}\nRSS ${t.rssMb.toFixed(1)} MB, CPU ${t.cpuPercent.toFixed(0)} %, power ${power}`;
}

/** Splits a stream of text into lines; `push` returns the complete lines, keeping the rest. */
export class LineSplitter {
  private rest = '';
  push(chunk: string): string[] {
    const parts = (this.rest + chunk).split('\n');
    this.rest = parts.pop() ?? '';
    return parts.map((l) => l.replace(/\r$/, '')).filter((l) => l !== '');
  }
}
