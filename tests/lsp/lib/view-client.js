// A graph-view client for the view server inside `cellscope lsp` (the `ws` package), shared by the
// view and debug-focus tests.
import WebSocket from 'ws';

import { withTimeout } from './harness.js';

// A view: collects the server's messages; next(pred) waits for the first unseen one matching.
export function openView(url, headers = {}) {
  const u = new URL(url);
  const ws = new WebSocket(`ws://${u.host}/ws?token=${u.searchParams.get('token')}&file=${encodeURIComponent(u.searchParams.get('file'))}`, { headers });
  const messages = [];
  let wake = () => {};
  ws.on('message', (data) => {
    messages.push(JSON.parse(data.toString()));
    wake();
  });
  let index = 0;
  const next = (pred, what) =>
    withTimeout(
      new Promise((resolve) => {
        const check = () => {
          while (index < messages.length) {
            const m = messages[index++];
            if (pred(m)) {
              // Unhook: a message arriving before the next next() must wait for that call's
              // predicate, not be consumed (and lost) by this finished one.
              wake = () => {};
              return resolve(m);
            }
          }
          wake = check;
        };
        check();
      }),
      15000,
      what,
    );
  return { ws, messages, next, opened: new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('unexpected-response', (_, res) => reject(new Error(`HTTP ${res.statusCode}`))); ws.on('error', reject); }) };
}
