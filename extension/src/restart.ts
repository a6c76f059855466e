// When to restart `cellscope lsp` after it dies, and what to tell the user. Pure: no timers, no
// clock (every time is passed in), no VS Code.
//
// Crashes come in bursts: a crash of a server that had been running for less than `stableMs`
// belongs to the burst of the crash before it; one that had run longer starts a new burst. The
// first crash of a burst restarts at once and is announced (one notification per burst); the
// following ones back off exponentially (1 s, 2 s, 4 s, ... capped) and go only to the output
// channel. A burst of more than `maxRestarts` restarts is a crash loop: the server is not
// restarted again until the user asks (which starts a fresh history).

export interface RestartPolicy {
  /** Delay of the second restart of a burst; each further one doubles it (the first is immediate). */
  baseDelayMs: number;
  /** Cap of the backoff delay. */
  maxDelayMs: number;
  /** Restarts allowed in one burst; the crash after the last one stops the server. */
  maxRestarts: number;
  /** A server that ran at least this long before dying ends the burst: its crash starts a new one. */
  stableMs: number;
}

export const DEFAULT_RESTART_POLICY: Readonly<RestartPolicy> = {
  baseDelayMs: 1000,
  maxDelayMs: 30000,
  maxRestarts: 5,
  stableMs: 3 * 60 * 1000,
};

/** Delay before the `n`-th restart of a burst (1-based): 0, then base, 2 base, 4 base, ... capped. */
export function backoffDelay(n: number, policy: Readonly<RestartPolicy> = DEFAULT_RESTART_POLICY): number {
  if (!Number.isFinite(n) || n <= 1) return 0;
  // 2 ** (n - 2) grows past any cap long before it overflows; min() keeps it bounded anyway.
  return Math.min(policy.baseDelayMs * 2 ** Math.min(n - 2, 52), policy.maxDelayMs);
}

export type CrashDecision =
  | {
      action: 'restart';
      /** 1-based: the n-th restart of this burst. */
      restart: number;
      delayMs: number;
      /** True for the first crash of a burst: the one the user is told about. */
      notify: boolean;
    }
  | {
      action: 'stop';
      /** Crashes in the burst, this one included. */
      crashes: number;
      /** From the start of the burst's first run to this crash. */
      burstMs: number;
    };

/**
 * The crash history of one server, from the user's last (re)start. `crash(startedAt, now)` is
 * called once per death of the server: `startedAt` is when that run was spawned.
 */
export class CrashHistory {
  private crashes = 0;
  private burstStart = 0;

  constructor(private readonly policy: Readonly<RestartPolicy> = DEFAULT_RESTART_POLICY) {}

  crash(startedAt: number, now: number): CrashDecision {
    const ran = Math.max(0, now - startedAt);
    if (this.crashes === 0 || ran >= this.policy.stableMs) {
      this.crashes = 0;
      this.burstStart = startedAt;
    }
    this.crashes++;
    if (this.crashes > this.policy.maxRestarts) {
      return { action: 'stop', crashes: this.crashes, burstMs: Math.max(0, now - this.burstStart) };
    }
    return {
      action: 'restart',
      restart: this.crashes,
      delayMs: backoffDelay(this.crashes, this.policy),
      notify: this.crashes === 1,
    };
  }

  /** The user restarted the server (command, notification action, setting change): forget the past. */
  reset(): void {
    this.crashes = 0;
    this.burstStart = 0;
  }
}

/** How a process ended, as Node reports it ('exit' event); both null: unknown (still running?). */
export interface ExitInfo {
  code: number | null;
  signal: string | null;
}

export function describeExit(exit: ExitInfo | undefined): string {
  if (!exit || (exit.code === null && exit.signal === null)) return 'closed its connection';
  if (exit.signal !== null) return `killed by signal ${exit.signal}`;
  return `exit code ${exit.code}`;
}

/** 850 ms, 1.5 s, 12 s, 3 min 5 s, 2 h 1 min. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10000) {
    const s = Math.round(ms / 100) / 10;
    return `${Number.isInteger(s) ? s.toFixed(0) : s.toFixed(1)} s`;
  }
  const totalS = Math.round(ms / 1000);
  if (totalS < 60) return `${totalS} s`;
  const totalMin = Math.floor(totalS / 60);
  if (totalMin < 60) {
    const s = totalS % 60;
    return s ? `${totalMin} min ${s} s` : `${totalMin} min`;
  }
  const h = Math.floor(totalMin / 60);
  const min = totalMin % 60;
  return min ? `${h} h ${min} min` : `${h} h`;
}

/** "1st", "2nd", "3rd", "4th", "11th", "21st". */
export function ordinal(n: number): string {
  const m100 = n % 100;
  if (m100 >= 11 && m100 <= 13) return `${n}th`;
  switch (n % 10) {
    case 1: return `${n}st`;
    case 2: return `${n}nd`;
    case 3: return `${n}rd`;
    default: return `${n}th`;
  }
}

export interface CrashReport {
  /** For the output channel, always. */
  log: string;
  /** For a notification: only on the first crash of a burst and when the server is given up. */
  notification?: string;
  /** The status bar's tooltip line. */
  status: string;
}

/**
 * What to say about one crash: `how` is how the process ended (describeExit, or why it could not
 * start), `ranMs` how long that run lasted, `server` names it (e.g. "cellscope lsp (pid 1234)").
 */
export function crashReport(
  decision: CrashDecision,
  how: string,
  ranMs: number,
  server: string,
  policy: Readonly<RestartPolicy> = DEFAULT_RESTART_POLICY,
): CrashReport {
  const ended = `${server} ended unexpectedly (${how}) after running ${formatDuration(ranMs)}`;
  if (decision.action === 'stop') {
    const loop = `${decision.crashes} crashes in ${formatDuration(decision.burstMs)}`;
    return {
      log: `${ended}: ${loop}, not restarted again. "MindSpore: Restart Language Server" starts it.`,
      notification: `Cellscope: the language server crashed ${decision.crashes} times in ` +
        `${formatDuration(decision.burstMs)} (last: ${how}) and is not restarted. Its messages are in the output.`,
      status: `crashed ${decision.crashes} times in ${formatDuration(decision.burstMs)} (last: ${how})`,
    };
  }
  const when = decision.delayMs === 0 ? 'now' : `in ${formatDuration(decision.delayMs)}`;
  return {
    log: `${ended}; restarting ${when} (restart ${decision.restart} of at most ${policy.maxRestarts} in a row)`,
    notification: decision.notify
      ? `Cellscope: the language server crashed (${how}) and is being restarted.`
      : undefined,
    status: `crashed (${how}); ${ordinal(decision.restart)} restart ${when}`,
  };
}
