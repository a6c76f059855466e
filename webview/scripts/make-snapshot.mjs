#!/usr/bin/env node
// make-snapshot.mjs DOC.json OUT.html [--cell NAME]
// Writes a self-contained snapshot page the way `cellscope graph --format html` does: app.css,
// app.js and the layout worker inlined, the document as [hello, update] ViewMessages.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
if (args.length < 2) {
  console.error('usage: make-snapshot.mjs DOC.json OUT.html [--cell NAME]');
  process.exit(2);
}
const [docPath, outPath] = args;
const ci = args.indexOf('--cell');
const cell = ci >= 0 ? args[ci + 1] : '';
const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const css = readFileSync(join(dist, 'app.css'), 'utf8');
const js = readFileSync(join(dist, 'app.js'), 'utf8');
const worker = readFileSync(join(dist, 'layout-worker.js'), 'utf8');
const doc = JSON.parse(readFileSync(docPath, 'utf8'));
const messages = [
  { hello: { file: doc.file ?? '', toolVersion: doc.toolVersion ?? '', targets: [], editor: false, focusCell: cell } },
  { update: { seq: 1, document: doc, analysisMs: 0, focusCell: cell } },
];
// Inside <script> elements only "</script" (and "<!--") can end or confuse the element.
const safe = (s) => s.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Cellscope — ${(doc.file ?? 'graph').replace(/[<&]/g, '')}</title>
<style>${css.replace(/<\/(style)/gi, '<\\/$1')}</style>
</head><body>
<script id="cellscope-snapshot" type="application/json">${safe(JSON.stringify(messages))}</script>
<script id="cellscope-worker-src" type="text/plain">${safe(worker)}</script>
<script>${safe(js)}</script>
</body></html>
`;
writeFileSync(outPath, html);
console.log(`wrote ${outPath} (${(html.length / 1024).toFixed(0)} KiB)`);
