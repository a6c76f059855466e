// The end of a training debug session: `cellscope dap` (modes train and joint) writes the trained
// checkpoint next to the file and, when the file has an `ms.export(...)` call, the model it
// describes, then sends the custom DAP event `cellscope.sessionArtifacts`
// {file, cell, checkpoint, mindir?, onnx?, notes?} (docs/dap.md). The extension offers them in a
// notification: "Open in Graph View" (the MindIR in the MindIR viewer, else the trained file's
// graph) and "Reveal Checkpoint". Independent of VS Code (the notification and the actions are
// injected), so it is unit-tested with fakes.
import * as path from 'path';

import { DEBUG_TYPE } from './debugfocus';

export const SESSION_ARTIFACTS_EVENT = 'cellscope.sessionArtifacts';

export interface SessionArtifacts {
  file: string;        // the trained program (canonical path)
  cell: string;        // the trained network's class
  checkpoint: string;  // the trained checkpoint written
  mindir?: string;     // the MindIR the file's ms.export call describes, when written
  onnx?: string;       // the ONNX model, when the call asks for ONNX
  notes: string[];     // why no model was exported, when the call could not be followed
}

export type ArtifactAction =
  | { kind: 'openModel'; path: string }   // a .mindir in the MindIR viewer
  | { kind: 'showGraph'; path: string }   // the graph view of a Python file
  | { kind: 'reveal'; path: string };     // the file in the OS file manager

export interface ArtifactsUi {
  /** Shows the message with the action titles; resolves to the title picked (undefined: dismissed). */
  show(message: string, titles: string[]): PromiseLike<string | undefined>;
  run(action: ArtifactAction): PromiseLike<unknown> | unknown;
}

const isPath = (v: unknown): v is string => typeof v === 'string' && path.isAbsolute(v);

/** The event's body, checked (absolute paths), or undefined when it is not one. */
export function parseArtifacts(body: unknown): SessionArtifacts | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const b = body as Record<string, unknown>;
  if (!isPath(b.file) || !isPath(b.checkpoint)) return undefined;
  const out: SessionArtifacts = {
    file: b.file,
    cell: typeof b.cell === 'string' ? b.cell : '',
    checkpoint: b.checkpoint,
    notes: Array.isArray(b.notes) ? b.notes.filter((n): n is string => typeof n === 'string') : [],
  };
  if (isPath(b.mindir)) out.mindir = b.mindir;
  if (isPath(b.onnx)) out.onnx = b.onnx;
  return out;
}

/** The notification's text and its actions, by title, in order. */
export function artifactsNotification(a: SessionArtifacts): { message: string; actions: [string, ArtifactAction][] } {
  const written = [path.basename(a.checkpoint), a.mindir, a.onnx].filter((p): p is string => !!p).map((p) => path.basename(p));
  let message = `MindSpore: ${a.cell || path.basename(a.file)} trained; wrote ${written.join(' and ')}.`;
  if (a.notes.length) message += ` ${a.notes[0]}`;
  const actions: [string, ArtifactAction][] = [
    ['Open in Graph View', a.mindir ? { kind: 'openModel', path: a.mindir } : { kind: 'showGraph', path: a.file }],
    ['Reveal Checkpoint', { kind: 'reveal', path: a.checkpoint }],
  ];
  return { message, actions };
}

export class ArtifactsNotifier {
  /** The artifacts announced so far (tests and logs). */
  readonly shown: SessionArtifacts[] = [];

  constructor(private readonly ui: ArtifactsUi, private readonly log?: (line: string) => void) {}

  /** A custom event of a debug session; true when it was the artifacts event of a `mindspore` session. */
  onCustomEvent(sessionType: string, event: string, body: unknown): boolean {
    if (sessionType !== DEBUG_TYPE || event !== SESSION_ARTIFACTS_EVENT) return false;
    const a = parseArtifacts(body);
    if (!a) {
      this.log?.('debug session: ignoring a cellscope.sessionArtifacts event without absolute file and checkpoint paths');
      return false;
    }
    this.shown.push(a);
    void this.offer(a);
    return true;
  }

  private async offer(a: SessionArtifacts): Promise<void> {
    const { message, actions } = artifactsNotification(a);
    try {
      const picked = await this.ui.show(message, actions.map(([title]) => title));
      const action = actions.find(([title]) => title === picked);
      if (action) await this.ui.run(action[1]);
    } catch (e) {
      this.log?.(`debug session: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}
