#!/usr/bin/env node
// mock-server.mjs PORT DOC.json [DOC2.json] — a stand-in for the C++ view server, for testing the
// WebSocket transport before/without it: serves dist/ and /ws (hello, full document, deltas,
// details). Control endpoints: /push (next document, as a delta), /push-full, /fail (a failed
// analysis), /drop (close every socket), /bad-delta (a delta with a wrong base).
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [port, docA, docB] = process.argv.slice(2);
const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const full = [JSON.parse(readFileSync(docA, 'utf8'))];
if (docB) full.push(JSON.parse(readFileSync(docB, 'utf8')));
const strip = (doc) => {
  const d = structuredClone(doc);
  for (const c of d.cells ?? []) for (const n of c.optimized?.nodes ?? []) for (const k of n.hardware ?? []) {
    delete k.tiling; delete k.loops; delete k.dma; delete k.schedule;
  }
  return d;
};
const live = full.map(strip);
let cur = 0, seq = 1;
const sockets = new Set();

function frame(text) {
  const data = Buffer.from(text);
  let head;
  if (data.length < 126) head = Buffer.from([0x81, data.length]);
  else if (data.length < 65536) { head = Buffer.alloc(4); head[0] = 0x81; head[1] = 126; head.writeUInt16BE(data.length, 2); }
  else { head = Buffer.alloc(10); head[0] = 0x81; head[1] = 127; head.writeBigUInt64BE(BigInt(data.length), 2); }
  return Buffer.concat([head, data]);
}
const send = (s, m) => s.write(frame(JSON.stringify(m)));
const broadcast = (m) => { for (const s of sockets) send(s, m); };

function delta(a, b, base) {
  const cells = (b.cells ?? []).map((cb) => {
    const ca = (a.cells ?? []).find((c) => c.name === cb.name) ?? { nodes: [], optimized: { nodes: [] } };
    const diffNodes = (xs, ys) => {
      const old = new Map(xs.map((n) => [n.id, JSON.stringify(n)]));
      const ids = new Set(ys.map((n) => n.id));
      return { up: ys.filter((n) => old.get(n.id) !== JSON.stringify(n)), rm: xs.filter((n) => !ids.has(n.id)).map((n) => n.id), order: ys.map((n) => n.id) };
    };
    const s = diffNodes(ca.nodes ?? [], cb.nodes ?? []);
    const o = diffNodes(ca.optimized?.nodes ?? [], cb.optimized?.nodes ?? []);
    const header = { ...cb, nodes: [] };
    if (cb.optimized) header.optimized = { ...cb.optimized, nodes: [] };
    return { name: cb.name, header, nodes: s.up, removed: s.rm, order: s.order, optimizedNodes: o.up, optimizedRemoved: o.rm, optimizedOrder: o.order };
  });
  return { base, header: { ...b, cells: [] }, cells };
}

const server = createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  const files = { '/': 'index.html', '/app.js': 'app.js', '/app.css': 'app.css', '/layout-worker.js': 'layout-worker.js' };
  const types = { html: 'text/html', js: 'text/javascript', css: 'text/css' };
  if (files[url.pathname]) {
    const f = files[url.pathname];
    res.writeHead(200, { 'content-type': types[f.split('.').pop()] + '; charset=utf-8' });
    res.end(readFileSync(join(dist, f)));
    return;
  }
  if (url.pathname === '/push' || url.pathname === '/push-full' || url.pathname === '/bad-delta') {
    const next = (cur + 1) % live.length;
    const update = url.pathname === '/push-full' ? { seq: seq + 1, document: live[next] }
      : { seq: seq + 1, delta: delta(live[cur], live[next], url.pathname === '/bad-delta' ? seq + 100 : seq) };
    if (url.pathname !== '/bad-delta') { cur = next; seq++; }
    broadcast({ status: { state: 'analysing' } });
    broadcast({ update: { ...update, analysisMs: 12 } });
    broadcast({ status: { state: 'ok' } });
    res.end(`seq ${seq}\n`);
    return;
  }
  if (url.pathname === '/fail') {
    broadcast({ status: { state: 'failed', message: 'the file does not parse', diagnostics: [{ file: live[cur].file, range: { start: { line: 11, character: 4 }, end: { line: 11, character: 9 } }, severity: 'error', code: 'syntax-error', message: "expected ':'" }] } });
    res.end('failed\n');
    return;
  }
  if (url.pathname === '/drop') { for (const s of sockets) s.destroy(); sockets.clear(); res.end('dropped\n'); return; }
  res.writeHead(404); res.end();
});

server.on('upgrade', (req, socket) => {
  const key = req.headers['sec-websocket-key'];
  const accept = createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
  sockets.add(socket);
  const file = new URL(req.url, 'http://x').searchParams.get('file') ?? '';
  send(socket, { hello: { file, toolVersion: 'mock', targets: ['ascend910'], editor: process.env.EDITOR_MODE === '1', focusCell: '' } });
  send(socket, { update: { seq, document: live[cur], analysisMs: 10 } });
  let buf = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 2) {
      const op = buf[0] & 0x0f;
      let len = buf[1] & 0x7f, off = 2;
      if (len === 126) { len = buf.readUInt16BE(2); off = 4; } else if (len === 127) { len = Number(buf.readBigUInt64BE(2)); off = 10; }
      if (buf.length < off + 4 + len) return;
      const mask = buf.subarray(off, off + 4);
      const payload = Buffer.from(buf.subarray(off + 4, off + 4 + len));
      for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
      buf = buf.subarray(off + 4 + len);
      if (op === 8) { sockets.delete(socket); socket.end(); return; }
      if (op !== 1) continue;
      const req = JSON.parse(payload.toString());
      console.log('request', JSON.stringify(req));
      if (req.details) {
        const cell = full[cur].cells.find((c) => c.name === req.details.cell);
        const n = cell?.optimized?.nodes?.find((x) => x.id === req.details.node);
        send(socket, { details: { seq, cell: req.details.cell, node: req.details.node, kernels: n?.hardware ?? [], error: n ? '' : 'unknown node' } });
      }
    }
  });
  socket.on('close', () => sockets.delete(socket));
  socket.on('error', () => sockets.delete(socket));
});

server.listen(Number(port), '127.0.0.1', () => console.log(`mock view server on http://127.0.0.1:${port}/?file=${encodeURIComponent(live[0].file ?? '')}`));
