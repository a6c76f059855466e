import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  backoffDelay,
  CrashHistory,
  crashReport,
  DEFAULT_RESTART_POLICY,
  describeExit,
  formatDuration,
  ordinal,
  type CrashDecision,
  type RestartPolicy,
} from '../../src/restart';

const S = 1000;
const MIN = 60 * S;

test('backoff: immediate, then 1 s, 2 s, 4 s, ... capped at 30 s', () => {
  const delays = Array.from({ length: 9 }, (_, i) => backoffDelay(i + 1));
  assert.deepEqual(delays, [0, 1 * S, 2 * S, 4 * S, 8 * S, 16 * S, 30 * S, 30 * S, 30 * S]);
  assert.equal(backoffDelay(0), 0);
  assert.equal(backoffDelay(-3), 0);
  assert.equal(backoffDelay(Number.NaN), 0);
  // No overflow to Infinity/NaN however long the burst.
  assert.equal(backoffDelay(5000), 30 * S);
  assert.equal(backoffDelay(Number.MAX_SAFE_INTEGER), 30 * S);
  const p: RestartPolicy = { baseDelayMs: 250, maxDelayMs: 1500, maxRestarts: 3, stableMs: 10 * S };
  assert.deepEqual([1, 2, 3, 4, 5].map((n) => backoffDelay(n, p)), [0, 250, 500, 1000, 1500]);
});

/** Replays a server that dies `ranMs` after each start; restarts happen after the decided delay. */
function replay(h: CrashHistory, runs: number[], t0 = 1_000_000): CrashDecision[] {
  const out: CrashDecision[] = [];
  let start = t0;
  for (const ran of runs) {
    const d = h.crash(start, start + ran);
    out.push(d);
    start = start + ran + (d.action === 'restart' ? d.delayMs : 0);
  }
  return out;
}

test('a crash loop: restarts with backoff, announced once, then stops after the 5th restart', () => {
  const h = new CrashHistory();
  const ds = replay(h, [50, 50, 50, 50, 50, 50, 50]);
  assert.deepEqual(ds.slice(0, 5), [
    { action: 'restart', restart: 1, delayMs: 0, notify: true },
    { action: 'restart', restart: 2, delayMs: 1 * S, notify: false },
    { action: 'restart', restart: 3, delayMs: 2 * S, notify: false },
    { action: 'restart', restart: 4, delayMs: 4 * S, notify: false },
    { action: 'restart', restart: 5, delayMs: 8 * S, notify: false },
  ]);
  // 6 runs of 50 ms and 15 s of backoff between them.
  assert.deepEqual(ds[5], { action: 'stop', crashes: 6, burstMs: 6 * 50 + 15 * S });
  // Stopped stays stopped until the user restarts it (a late crash report changes nothing).
  assert.equal(ds[6]!.action, 'stop');
  assert.equal(ds.filter((d) => d.action === 'restart' && d.notify).length, 1);
});

test('a server that ran for a while starts a new burst: immediate restart, told again', () => {
  const h = new CrashHistory();
  // Dies after 10 min, then after 30 s, then again after 10 min.
  const ds = replay(h, [10 * MIN, 30 * S, 10 * MIN, 1 * S]);
  assert.deepEqual(ds, [
    { action: 'restart', restart: 1, delayMs: 0, notify: true },
    { action: 'restart', restart: 2, delayMs: 1 * S, notify: false },
    { action: 'restart', restart: 1, delayMs: 0, notify: true },
    { action: 'restart', restart: 2, delayMs: 1 * S, notify: false },
  ]);
  // A run of exactly stableMs counts as stable.
  const h2 = new CrashHistory();
  replay(h2, [1 * S]);
  assert.deepEqual(h2.crash(0, DEFAULT_RESTART_POLICY.stableMs), { action: 'restart', restart: 1, delayMs: 0, notify: true });
});

test('slow crashes still add up to a crash loop when no run is stable', () => {
  const h = new CrashHistory();
  const ds = replay(h, [2 * MIN, 2 * MIN, 2 * MIN, 2 * MIN, 2 * MIN, 2 * MIN]);
  assert.deepEqual(ds.map((d) => d.action), ['restart', 'restart', 'restart', 'restart', 'restart', 'stop']);
});

test('reset (the user restarted it) forgets the burst, even a stopped one', () => {
  const h = new CrashHistory();
  replay(h, [10, 10, 10, 10, 10, 10]);
  h.reset();
  assert.deepEqual(h.crash(0, 10), { action: 'restart', restart: 1, delayMs: 0, notify: true });
});

test('a custom policy: 2 restarts, then stop', () => {
  const h = new CrashHistory({ baseDelayMs: 100, maxDelayMs: 100, maxRestarts: 2, stableMs: 5 * S });
  assert.deepEqual(replay(h, [1, 1, 1]).map((d) => (d.action === 'restart' ? d.delayMs : 'stop')), [0, 100, 'stop']);
});

test('clock skew (a crash reported before its start) does not break the arithmetic', () => {
  const h = new CrashHistory();
  assert.deepEqual(h.crash(5000, 4000), { action: 'restart', restart: 1, delayMs: 0, notify: true });
  const d = replay(h, [0, 0, 0, 0, 0]).at(-1)!;
  assert.equal(d.action, 'stop');
  assert.ok(d.action === 'stop' && d.burstMs >= 0);
});

test('exit reasons', () => {
  assert.equal(describeExit({ code: null, signal: 'SIGKILL' }), 'killed by signal SIGKILL');
  assert.equal(describeExit({ code: 3, signal: null }), 'exit code 3');
  assert.equal(describeExit({ code: 0, signal: null }), 'exit code 0');
  assert.equal(describeExit({ code: null, signal: null }), 'closed its connection');
  assert.equal(describeExit(undefined), 'closed its connection');
});

test('durations and ordinals', () => {
  assert.deepEqual([0, 12.4, 999, 1000, 1500, 9949, 10000, 59400, 60000, 185000, 3600000, 7260000, -5, Number.NaN].map(formatDuration),
    ['0 ms', '12 ms', '999 ms', '1 s', '1.5 s', '9.9 s', '10 s', '59 s', '1 min', '3 min 5 s', '1 h', '2 h 1 min', '0 ms', '0 ms']);
  assert.deepEqual([1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111].map(ordinal),
    ['1st', '2nd', '3rd', '4th', '11th', '12th', '13th', '21st', '22nd', '101st', '111th']);
});

test('what is said: one notification per burst, every crash in the log, the give-up with its reason', () => {
  const h = new CrashHistory();
  const server = 'cellscope lsp (pid 42)';
  const first = crashReport(h.crash(0, 12 * S), describeExit({ code: null, signal: 'SIGKILL' }), 12 * S, server);
  assert.equal(first.notification, 'Cellscope: the language server crashed (killed by signal SIGKILL) and is being restarted.');
  assert.equal(first.log, 'cellscope lsp (pid 42) ended unexpectedly (killed by signal SIGKILL) after running 12 s; ' +
    'restarting now (restart 1 of at most 5 in a row)');
  assert.match(first.status, /killed by signal SIGKILL.*1st restart now/);

  const second = crashReport(h.crash(12 * S, 12 * S + 300), describeExit({ code: 134, signal: null }), 300, server);
  assert.equal(second.notification, undefined);
  assert.match(second.log, /\(exit code 134\) after running 300 ms; restarting in 1 s \(restart 2 of at most 5 in a row\)$/);
  assert.match(second.status, /2nd restart in 1 s/);

  const stop = crashReport({ action: 'stop', crashes: 6, burstMs: 15300 }, describeExit({ code: 3, signal: null }), 20, server);
  assert.equal(stop.notification,
    'Cellscope: the language server crashed 6 times in 15 s (last: exit code 3) and is not restarted. Its messages are in the output.');
  assert.match(stop.log, /6 crashes in 15 s, not restarted again\. "MindSpore: Restart Language Server" starts it\.$/);
  assert.equal(stop.status, 'crashed 6 times in 15 s (last: exit code 3)');
});
