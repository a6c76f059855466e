// MNIST-like idx files for the DAP training tests and benchmark, generated here (nothing is
// downloaded): 28x28 uint8 images of ten classes, class k a bright 6x5 block at its own place
// (row 3 or 17, column 2 + 5 * (k % 5)) over seeded uniform noise of 0..63, the labels in a
// seeded order. An easy problem: a small MLP learns it in a few steps. Laid out as
// mindspore.dataset.MnistDataset reads it: train-images-idx3-ubyte / train-labels-idx1-ubyte
// (usage 'train') and t10k-* (usage 'test').
import fs from 'node:fs';
import path from 'node:path';

// A 32-bit linear congruential generator (Numerical Recipes' constants), seeded.
function lcg(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s;
  };
}

function idx(magicDims, dims, data) {
  const header = Buffer.alloc(4 + 4 * dims.length);
  header.writeUInt8(0x08, 2);  // unsigned byte data
  header.writeUInt8(magicDims, 3);
  dims.forEach((d, i) => header.writeUInt32BE(d, 4 + 4 * i));
  return Buffer.concat([header, Buffer.from(data)]);
}

function split(n, seed) {
  const next = lcg(seed);
  const images = new Uint8Array(n * 28 * 28);
  const labels = new Uint8Array(n);
  for (let i = 0; i < n; ++i) {
    const k = next() % 10;
    labels[i] = k;
    const img = images.subarray(i * 784, (i + 1) * 784);
    for (let p = 0; p < 784; ++p) img[p] = next() % 64;
    const r0 = k < 5 ? 3 : 17;
    const c0 = 2 + 5 * (k % 5);
    for (let r = r0; r < r0 + 6; ++r) {
      for (let c = c0; c < c0 + 5; ++c) img[r * 28 + c] = 200 + (next() % 56);
    }
  }
  return { images, labels };
}

// Writes the four idx files into `dir` (created): `train` and `test` rows.
export function writeMnist(dir, { train = 640, test = 160, seed = 7 } = {}) {
  fs.mkdirSync(dir, { recursive: true });
  for (const [prefix, n, s] of [['train', train, seed], ['t10k', test, seed + 1]]) {
    const { images, labels } = split(n, s);
    fs.writeFileSync(path.join(dir, `${prefix}-images-idx3-ubyte`), idx(3, [n, 28, 28], images));
    fs.writeFileSync(path.join(dir, `${prefix}-labels-idx1-ubyte`), idx(1, [n], labels));
  }
  return dir;
}
