// End-to-end test of "MindSpore: Launch on Cluster (msrun)" (issue 21) with the packaged extension
// in a real VS Code: code-server + Debian's chromium (harness.mjs), and MindSpore 2.10's own
// msrun from the MindSpore venv (scripts/msvenv.sh makes it; the extension tier runs it first).
// Screenshots go to test/e2e/artifacts/msrun/.
//
//   node test/e2e/msrun.mjs [path/to/cellscope-x.y.z.vsix]
//
// Scenario: a workspace with a data-parallel training script (init(), data_parallel,
// TrainOneStepCell: MindSpore's DistributedGradReducer sums the gradients) and a
// mindspore_config.json whose `cluster` asks for two local CPU workers with the venv's python.
// The command palette's "MindSpore: Launch on Cluster (msrun)" with the script active. Checked:
//  (a) the terminal "MindSpore msrun" opens, and the check ran before msrun ("no problems");
//  (b) every rank's log is streamed into it under its prefix: "[rank 0] trained rank 0 of 2 ...
//      finite True" and the same for rank 1, and the scheduler's under "[scheduler]";
//  (c) the job ends with "the job finished (exit 0)" and the logs are in msrun_log/ of the
//      workspace;
//  (d) the terminal stays open with the log and the exit line after the job (VS Code would close
//      a terminal whose own process exits 0: the launch runs in a Pseudoterminal);
//  (e) Ctrl+C typed in the terminal of a second, endless job stops it: the Pseudoterminal sends
//      SIGINT, `cellscope launch` says so and stops msrun, the terminal shows the end line, and no
//      worker of the job is left running.
// The terminal is read from the page: with GPU acceleration off, xterm.js renders its rows as
// DOM text; they are sampled while the job runs, then the scrollback is read page by page from
// the top. The run's duration is printed at the end.
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { createE2E, here, until, runCommand, openAnalysed, freePort } from './harness.mjs';

const python = process.env.CELLSCOPE_MS_PYTHON ??
  join(process.env.CELLSCOPE_MS_VENV ?? join(process.env.HOME ?? '/root', '.cache', 'cellscope', 'msvenv'), 'bin', 'python');
if (!existsSync(python)) {
  console.error(`msrun.mjs needs MindSpore's venv (${python}): run scripts/msvenv.sh first (the extension tier does)`);
  process.exit(2);
}

const e2e = createE2E({
  artifacts: join(here, 'artifacts', 'msrun'),
  tmpPrefix: 'cellscope-e2e-msrun-',
  deadlineMs: Number(process.env.E2E_DEADLINE_MS ?? 300000),
  what: 'the msrun e2e test',
  // xterm.js draws its rows as DOM text without the GPU renderers: the test reads them.
  settings: { 'terminal.integrated.gpuAcceleration': 'off', 'terminal.integrated.scrollback': 5000 },
});
const { log, check, ws, T0 } = e2e;
const norm = (t) => (t ?? '').replace(/\u00a0/g, ' ');

const script = join(ws, 'train_dp.py');
writeFileSync(script, [
  'import numpy as np',
  'import mindspore as ms',
  'from mindspore import Tensor, nn',
  'from mindspore.communication import get_group_size, get_rank, init',
  '',
  'ms.set_context(mode=ms.GRAPH_MODE)',
  'ms.set_device("CPU")',
  'init()',
  'ms.set_auto_parallel_context(parallel_mode="data_parallel", gradients_mean=True)',
  '',
  'net = nn.Dense(16, 4)',
  'step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 0.1))',
  'inputs = (Tensor(np.ones((8, 16), np.float32)), Tensor(np.zeros((8, 4), np.float32)))',
  'for i in range(3):',
  '    loss = step(*inputs)',
  'print("trained rank", get_rank(), "of", get_group_size(), "loss", float(loss.asnumpy()),',
  '      "finite", bool(np.isfinite(loss.asnumpy())))',
  ''].join('\n'));
// (e): a job that runs until it is stopped, printing a step every half second on every rank.
const endless = join(ws, 'train_forever.py');
writeFileSync(endless, [
  'import time',
  'import mindspore as ms',
  'from mindspore.communication import get_rank, init',
  '',
  'ms.set_device("CPU")',
  'init()',
  'step = 0',
  'while True:',
  '    print("waiting step", step, "on rank", get_rank(), flush=True)',
  '    step += 1',
  '    time.sleep(0.5)',
  ''].join('\n'));
/** The pids of processes whose command line names `what` (pgrep; none: []). */
const processes = (what) => {
  try {
    return execFileSync('pgrep', ['-f', what], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch {
    return [];
  }
};
writeFileSync(join(ws, 'mindspore_config.json'), JSON.stringify({
  cluster: { worker_num: 2, local_worker_num: 2, master_port: await freePort(), python },
}, null, 2));

/** The text of the terminal panel's rows (xterm's DOM renderer), one string per row. */
async function terminalRows(page) {
  return page.evaluate(() => Array.from(document.querySelectorAll('.terminal-wrapper .xterm-rows > div'))
    .map((row) => (row.textContent ?? '').replace(/\u00a0/g, ' ')));
}

try {
  await e2e.start();
  const page = e2e.page;
  const { editorLines, analysed } = await openAnalysed(page, 'train_dp.py', 'TrainOneStepCell');
  check('the data-parallel script is analysed without errors', /no errors/.test(analysed), analysed.trim());
  const started = Date.now();
  await runCommand(page, 'MindSpore: Launch on Cluster (msrun)');

  // (a) the terminal, and the check before msrun.
  await until('the "MindSpore msrun" terminal', async () =>
    (await page.locator('.terminal-tabs-entry, .single-terminal-tab, .terminal-tab', { hasText: 'MindSpore msrun' }).count()) > 0 ||
    (await page.locator('.pane-header', { hasText: 'Terminal' }).count()) > 0, 30000);
  let rows = [];
  await until('the check to run before msrun', async () => {
    rows = await terminalRows(page);
    return rows.some((r) => r.includes('no problems in 1 file'));
  }, 60000, 500);
  check('(a) the launch checks the script first, in the "MindSpore msrun" terminal', true,
    rows.find((r) => r.includes('no problems')).trim());

  // (b), (c): every rank's line under its prefix, then the job's end. The terminal keeps every
  // row in scrollback; the DOM shows the visible ones, so the text is gathered as it comes.
  const seen = new Set();
  await until('the job to finish', async () => {
    for (const r of await terminalRows(page)) seen.add(r.trimEnd());
    return [...seen].some((r) => r.includes('[cellscope launch ended:'));
  }, 240000, 250);
  // (d) VS Code closes a terminal whose process exits 0: the launch's terminal is the extension's
  // own and stays, with its log, after a successful job.
  await page.waitForTimeout(2000);
  check('(d) the terminal stays open with the log after the job',
    (await terminalRows(page)).some((r) => r.includes('[cellscope launch ended: exit code 0. The log stays here')));
  await e2e.shot('msrun-terminal');
  // Rows that scrolled by between two samples: the whole scrollback, page by page from the top
  // (the terminal focused, Ctrl+Home, then Shift+PageDown: its own scrolling keys).
  await runCommand(page, 'Terminal: Focus Terminal');
  await page.keyboard.press('Control+Home');
  let previous = '';
  for (let pageNo = 0; pageNo < 400; pageNo++) {
    const visible = await terminalRows(page);
    for (const r of visible) seen.add(r.trimEnd());
    const key = visible.join('\n');
    if (key === previous) break;
    previous = key;
    await page.keyboard.press('Shift+PageDown');
  }
  const lines = [...seen];
  log(`${lines.length} distinct terminal rows read`);
  for (const rank of [0, 1]) {
    const line = lines.find((r) => r.startsWith(`[rank ${rank}] trained rank ${rank} of 2`));
    check(`(b) rank ${rank}'s log is streamed under "[rank ${rank}]"`, line !== undefined && /finite True/.test(line),
      line ?? lines.filter((r) => r.startsWith('[rank')).slice(-3).join(' | '));
  }
  check('(b) the scheduler\'s log is streamed under "[scheduler]"', lines.some((r) => r.startsWith('[scheduler] ')));
  const end = lines.find((r) => r.includes('the job finished') || r.includes('the job ended with exit code'));
  check('(c) the job finishes with exit 0', /the job finished \(exit 0\)/.test(end ?? ''), end?.trim());
  check('(c) the workers\' logs are in msrun_log/', existsSync(join(ws, 'msrun_log', 'worker_1.log')));
  log(`the launch took ${((Date.now() - started) / 1000).toFixed(1)} s`);

  // (e) Ctrl+C in the terminal of an endless job. The finished job's terminal is closed first, so
  // the panel shows the new one's rows only.
  await runCommand(page, 'Terminal: Kill the Active Terminal Instance');
  await openAnalysed(page, 'train_forever.py', 'waiting step');
  await runCommand(page, 'MindSpore: Launch on Cluster (msrun)');
  const running = new Set();
  await until('both ranks of the endless job to print', async () => {
    for (const r of await terminalRows(page)) running.add(r.trimEnd());
    return [0, 1].every((k) => [...running].some((r) => r.startsWith(`[rank ${k}] waiting step`)));
  }, 120000, 250);
  check('(e) the endless job runs on both ranks', processes('train_forever.py').length >= 2,
    `${processes('train_forever.py').length} processes`);
  await runCommand(page, 'Terminal: Focus Terminal');
  await page.keyboard.press('Control+C');
  const stopping = new Set();
  await until('the endless job to end after Ctrl+C', async () => {
    for (const r of await terminalRows(page)) stopping.add(r.trimEnd());
    return [...stopping].some((r) => r.includes('[cellscope launch ended:'));
  }, 60000, 250);
  const rowsAfter = [...stopping];
  check('(e) Ctrl+C reaches `cellscope launch` as SIGINT',
    rowsAfter.some((r) => r.includes('received SIGINT: stopping msrun and its workers')),
    rowsAfter.find((r) => r.includes('received')) ?? rowsAfter.slice(-4).join(' | '));
  check('(e) the terminal shows the end of the stopped job',
    rowsAfter.some((r) => r.includes('[cellscope launch ended:')),
    rowsAfter.find((r) => r.includes('[cellscope launch ended:'))?.trim());
  let left = [];
  await until('no worker of the stopped job left', async () => (left = processes('train_forever.py')).length === 0,
    20000, 500).catch(() => undefined);
  check('(e) no worker of the stopped job is left running', left.length === 0, `${left.length} left`);
  await e2e.shot('msrun-ctrl-c');
} catch (err) {
  await e2e.failWith(err);
}
await e2e.finish([`msrun e2e: ${((Date.now() - T0) / 1000).toFixed(1)} s in all`]);
