// A deployed model's device telemetry, as the view holds it (pure; devicepanel.ts draws the chart).
// It arrives as view.proto's DeviceProgress messages: a sample a second while `cellscope deploy
// --watch` runs in the editor, the watch's samples so far (`reset`) when the view connects.
import type { DeviceProgress, DeviceSample } from './protocol';
import { num } from './train';

/** The samples the server keeps (view/view_server.h kMaxDeviceSamples), when a message does not say. */
export const MAX_DEVICE_SAMPLES = 3600;

/** One sample, numbers parsed; undefined: not measured (power "n/a", no inferences to time). */
export interface DevicePoint {
  timeMs: number; fps: number; inferences: number;
  p50?: number; p99?: number; rssMb: number; cpuPercent: number;
  powerW?: number; powerSource: string;
  bundle: string; precision: string; backend: string; deploying: string;
  loadTop1?: number; loadCosine?: number; lastTop1?: number; lastCosine?: number;
}

const finite = (v: number | string | undefined): number | undefined => {
  const n = num(v);
  return n !== undefined && Number.isFinite(n) ? n : undefined;
};

export function devicePoint(s: DeviceSample): DevicePoint {
  return {
    timeMs: finite(s.timeMs) ?? 0, fps: finite(s.fps) ?? 0, inferences: finite(s.inferences) ?? 0,
    p50: finite(s.latencyP50Ms), p99: finite(s.latencyP99Ms), rssMb: finite(s.rssMb) ?? 0, cpuPercent: finite(s.cpuPercent) ?? 0,
    powerW: finite(s.powerW), powerSource: s.powerSource ?? '',
    bundle: s.bundle ?? '', precision: s.precision ?? '', backend: s.backend ?? '', deploying: s.deploying ?? '',
    loadTop1: finite(s.loadTop1Agreement), loadCosine: finite(s.loadCosine),
    lastTop1: finite(s.lastTop1Agreement), lastCosine: finite(s.lastCosine),
  };
}

/** The model's name of a bundle `NNNN-name.mindir` (the extension's status bar says the same). */
export function bundleModel(bundle: string): string {
  const m = /^\d+-(.+?)(\.mindir)?$/.exec(bundle);
  return m ? m[1] : bundle;
}

/** The moments the deployment stopped, as the chart marks them (DeviceSample.event). */
export const DEVICE_EVENTS = ['stopped', 'rolled back', 'disconnected'] as const;
export type DeviceEvent = typeof DEVICE_EVENTS[number];
export interface DeviceMark { timeMs: number; label: DeviceEvent }

/** What the chart says instead of a power axis when no sample measured the power. */
export const POWER_NA_LINE = 'power: n/a (no npu-smi, RAPL or hwmon reading on the device)';

/** The chart's data: x (seconds since the watch's first sample) and one column per series; null
 * where there is no value (a gap: power "n/a", latency without inferences). */
export interface DeviceChartData {
  x: number[];
  fps: (number | null)[];
  p50: (number | null)[];
  p99: (number | null)[];
  rss: (number | null)[];
  power: (number | null)[];
  /** The marks, x in the same seconds. */
  marks: { x: number; label: DeviceEvent }[];
}

/** A device watch as the view holds it. */
export class DeviceModel {
  samples: DevicePoint[] = [];
  /** Where the deployment stopped, was rolled back or lost its agent, in time order. */
  marks: DeviceMark[] = [];
  file = '';
  device = '';
  address = '';
  session = '';
  /** Messages applied (tests). */
  messages = 0;
  /** Bumped whenever the samples change (the chart redraws when it differs from what it drew). */
  version = 0;

  /** Applies a DeviceProgress; true when the chart was reset (a new watch, or the whole history). */
  apply(p: DeviceProgress): boolean {
    this.messages++;
    this.version++;
    const reset = !!p.reset;
    if (reset) { this.samples = []; this.marks = []; }
    if (p.file) this.file = p.file;
    if (p.device) this.device = p.device;
    if (p.session !== undefined) this.session = p.session;
    for (const s of p.samples ?? []) {
      if (s.event !== undefined && s.event !== '') {
        // A mark (not a point): kept when it is one the chart knows, at its time.
        const label = DEVICE_EVENTS.find((e) => e === s.event);
        const t = finite(s.timeMs);
        if (label && t !== undefined) this.marks.push({ timeMs: t, label });
        continue;
      }
      this.samples.push(devicePoint(s));
      if (s.address) this.address = s.address;
    }
    const max = p.maxSamples && p.maxSamples >= 1 ? p.maxSamples : MAX_DEVICE_SAMPLES;
    if (this.samples.length > max) this.samples = this.samples.slice(this.samples.length - max);
    const first = this.samples[0]?.timeMs;
    if (first !== undefined) this.marks = this.marks.filter((m) => m.timeMs >= first);
    return reset;
  }

  get last(): DevicePoint | undefined { return this.samples[this.samples.length - 1]; }

  /** The mark after the last sample: the deployment is stopped (until telemetry comes again). */
  ended(): DeviceMark | undefined {
    const m = this.marks[this.marks.length - 1];
    const s = this.last;
    return m && (!s || m.timeMs >= s.timeMs) && m.label !== 'rolled back' ? m : undefined;
  }

  /** Whether no sample measured the power (the device has no readable meter): "n/a". */
  powerNA(): boolean { return this.samples.every((s) => s.powerW === undefined); }

  chartData(): DeviceChartData {
    const t0 = this.samples[0]?.timeMs ?? 0;
    const v = (x: number | undefined): number | null => (x === undefined ? null : x);
    return {
      x: this.samples.map((s) => Math.round(s.timeMs - t0) / 1000),
      fps: this.samples.map((s) => s.fps),
      p50: this.samples.map((s) => v(s.p50)),
      p99: this.samples.map((s) => v(s.p99)),
      rss: this.samples.map((s) => s.rssMb),
      power: this.samples.map((s) => v(s.powerW)),
      marks: this.marks.map((m) => ({ x: Math.round(m.timeMs - t0) / 1000, label: m.label })),
    };
  }

  /** The header line: "edge1 · lenet · 212 FPS · p50 0.41 ms · p99 1.9 ms · RSS 48.2 MB · power n/a". */
  summary(): string {
    const s = this.last;
    if (!s) return 'Waiting for the device\'s telemetry…';
    const parts = [this.device || 'device', bundleModel(s.bundle) || 'nothing serves', `${Math.round(s.fps)} FPS`,
      s.p50 !== undefined && s.p99 !== undefined ? `p50 ${fmtMs(s.p50)} · p99 ${fmtMs(s.p99)}` : 'latency n/a',
      `RSS ${s.rssMb.toFixed(1)} MB`, `power ${fmtPower(s.powerW)}`];
    const end = this.ended();
    if (end) parts.push(end.label);
    return parts.join(' · ');
  }

  /** The figures shown as text under the chart, as [label, value] pairs. */
  facts(): [string, string][] {
    const s = this.last;
    if (!s) return [];
    const out: [string, string][] = [
      ['device', this.address ? `${this.device} (${this.address})` : this.device],
      ['model', s.bundle ? `${bundleModel(s.bundle)} (${s.bundle})` : 'nothing serves'],
      ['precision', s.precision || 'n/a'],
      ['backend', s.backend || 'n/a'],
      ['quality', quality(s)],
      ['FPS', String(Math.round(s.fps))],
      ['latency', s.p50 !== undefined && s.p99 !== undefined ? `p50 ${fmtMs(s.p50)}, p99 ${fmtMs(s.p99)}` : 'n/a (no inferences in the last 10 s)'],
      ['RSS', `${s.rssMb.toFixed(1)} MB`],
      ['CPU', `${s.cpuPercent.toFixed(0)} %`],
      ['power', s.powerW !== undefined ? `${fmtPower(s.powerW)}${s.powerSource ? ` (${s.powerSource})` : ''}` : 'n/a (no power meter readable on the device)'],
      ['inferences', String(s.inferences)],
    ];
    if (s.deploying) out.push(['deploying', s.deploying]);
    const end = this.ended();
    if (end) out.push(['watch', `${end.label} at ${clock(end.timeMs)}`]);
    return out;
  }
}

/** hh:mm:ss of an epoch time, local (where the chart's marks say when). */
export function clock(ms: number): string {
  const d = new Date(ms);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function fmtMs(v: number): string {
  return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ms`;
}

export function fmtPower(w: number | undefined): string {
  return w === undefined ? 'n/a' : `${w.toFixed(1)} W`;
}

/** int8 against fp32 (the agent's `agreement`): "n/a" for an fp32 model. */
export function quality(s: DevicePoint): string {
  if (s.loadTop1 === undefined && s.loadCosine === undefined && s.lastTop1 === undefined && s.lastCosine === undefined) {
    return s.precision === 'int8' ? 'n/a (not measured)' : `n/a (${s.precision || 'fp32'}: nothing to compare)`;
  }
  const pct = (v: number): string => `${(v * 100).toFixed(1)} %`;
  const parts: string[] = [];
  if (s.loadTop1 !== undefined || s.loadCosine !== undefined) {
    parts.push(`at load: top-1 agreement ${s.loadTop1 !== undefined ? pct(s.loadTop1) : 'n/a'}, cosine ${s.loadCosine !== undefined ? s.loadCosine.toFixed(5) : 'n/a'}`);
  }
  if (s.lastTop1 !== undefined || s.lastCosine !== undefined) {
    parts.push(`last inference: top-1 agreement ${s.lastTop1 !== undefined ? pct(s.lastTop1) : 'n/a'}, cosine ${s.lastCosine !== undefined ? s.lastCosine.toFixed(5) : 'n/a'}`);
  }
  return `int8 vs fp32 ${parts.join('; ')}`;
}
