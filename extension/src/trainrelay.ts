// A training run, relayed from the debug adapter to the graph view: `cellscope dap` in train or
// joint mode sends the custom DAP event `cellscope.trainStep` per optimizer step (view.proto's
// TrainStep in its JSON form) and, after the inference half of a joint session,
// `cellscope.drift` (PrecisionDrift). The extension passes each body to `cellscope lsp` (commands
// `cellscope.trainStep`, `cellscope.drift`) with the debug session's id, and a
// `cellscope.trainReset` for the program when a `mindspore` session starts, so that the views of
// the file drop the previous run's chart and drift overlay. In order: one request at a time.
// Independent of VS Code (the sender is injected), so it is unit-tested with fakes.
import * as path from 'path';

import { DEBUG_TYPE } from './debugfocus';

export const TRAIN_STEP_EVENT = 'cellscope.trainStep';
export const DRIFT_EVENT = 'cellscope.drift';

export type TrainCommand = 'cellscope.trainStep' | 'cellscope.drift' | 'cellscope.trainReset';

/** A message's body: TrainStep, PrecisionDrift, or {file} for a reset (only `file` is read). */
export interface TrainBody {
  file?: string;
  [k: string]: unknown;
}

export type TrainSender = (command: TrainCommand, body: TrainBody, session: string) => Promise<unknown> | unknown;

export class TrainRelay {
  private chain: Promise<void> = Promise.resolve();
  /** Messages passed on so far, by command (tests and logs). */
  readonly sent: Record<TrainCommand, number> = { 'cellscope.trainStep': 0, 'cellscope.drift': 0, 'cellscope.trainReset': 0 };
  private failed = false;

  constructor(private readonly send: TrainSender, private readonly log?: (line: string) => void) {}

  /** A debug session started: the views of its program drop the previous run. */
  onStarted(sessionId: string, sessionType: string, program: unknown): void {
    if (sessionType !== DEBUG_TYPE || typeof program !== 'string' || !path.isAbsolute(program)) return;
    this.enqueue('cellscope.trainReset', { file: program }, sessionId);
  }

  /** A custom event of a debug session; true when it was a training event of a `mindspore` session. */
  onCustomEvent(sessionId: string, sessionType: string, event: string, body: unknown): boolean {
    if (sessionType !== DEBUG_TYPE || !body || typeof body !== 'object') return false;
    const b = body as TrainBody;
    if (typeof b.file !== 'string' || b.file === '') return false;
    if (event === TRAIN_STEP_EVENT) this.enqueue('cellscope.trainStep', b, sessionId);
    else if (event === DRIFT_EVENT) this.enqueue('cellscope.drift', b, sessionId);
    else return false;
    return true;
  }

  /** Resolves once every message passed on so far was handled. */
  idle(): Promise<void> { return this.chain; }

  // In order: a reset never overtakes the steps before it, nor a step the reset before it.
  private enqueue(command: TrainCommand, body: TrainBody, session: string): void {
    this.chain = this.chain.then(async () => {
      try {
        this.sent[command]++;
        await this.send(command, body, session);
        this.failed = false;
      } catch (e) {
        // Once per failing streak: a run of a thousand steps must not write a thousand lines.
        if (!this.failed) this.log?.(`training: cannot pass ${command} to the graph view: ${e instanceof Error ? e.message : String(e)}`);
        this.failed = true;
      }
    });
  }
}
