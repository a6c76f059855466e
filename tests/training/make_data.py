#!/usr/bin/env python3
"""Writes the training tier's small, real datasets into OUT_DIR (nothing is downloaded).

    ~/.cache/cellscope/msvenv/bin/python tests/training/make_data.py OUT_DIR

OUT_DIR/mnist/        scikit-learn's load_digits (1,797 real handwritten digits, 8x8, values 0..16)
                      as MNIST idx files, laid out as mindspore.dataset.MnistDataset expects:
                        train-images-idx3-ubyte  train-labels-idx1-ubyte   samples 0..1499
                        t10k-images-idx3-ubyte   t10k-labels-idx1-ubyte    samples 1500..1796
                      Each 8x8 digit becomes a 28x28 uint8 image: pixel = round(v * 255 / 16)
                      (0..16 -> 0..255, Python's round: halves to even), each pixel repeated 3x3
                      (nearest upscale to 24x24), then 2 rows/columns of zeros on every side.
OUT_DIR/cifar10/      CIFAR-10 binary version: data_batch_1.bin (usage 'train') and test_batch.bin
                      (usage 'test'), 10,000 records each (MindSpore's fixed count per file) of
                      1 label byte + 3,072 pixel bytes (R plane, G plane, B plane, 32x32 each),
                      from numpy's default_rng(17): a per-class pattern plus noise, so images are
                      not pure noise.
OUT_DIR/imagefolder/  ImageFolderDataset layout: one sub-directory per class (bird, cat, dog),
                      PNG (RGB, RGBA, grayscale) and JPEG (quality 90) files of several sizes.
OUT_DIR/slices.npz    np.savez (stored) of x: float32 (10, 4), y: int32 (10,)
OUT_DIR/slices_deflated.npz  np.savez_compressed (deflated) of the same arrays
OUT_DIR/x.npy, y.npy  the same arrays as .npy files
OUT_DIR/images.npz    image: uint8 (6, 37, 53, 3) uniform random, label: int32 (6,)
OUT_DIR/encoder/      x.npy: float32 (320, 16, 32) sequences, y.npy: int32 (320,) labels 0..3, from
                      default_rng(29): each class shifts a different quarter of the features, so
                      the label is learnable (the Transformer encoder case)
"""
import os
import sys

import numpy as np


def write_idx(path, array):
    # idx: big-endian magic (0x0000 08 NDIM: unsigned byte data), then the dims as big-endian u32.
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = bytes([0, 0, 8, array.ndim]) + b"".join(
        int(d).to_bytes(4, "big") for d in array.shape)
    with open(path, "wb") as f:
        f.write(header)
        f.write(array.tobytes())


def digits_to_mnist(images):
    scaled = np.array([[round(float(v) * 255 / 16) for v in row] for row in images.reshape(-1, 8)],
                      dtype=np.uint8).reshape(-1, 8, 8)
    up = scaled.repeat(3, axis=1).repeat(3, axis=2)  # 24x24
    return np.pad(up, ((0, 0), (2, 2), (2, 2)))


def make_mnist(out):
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = digits_to_mnist(digits.images)
    labels = digits.target.astype(np.uint8)
    d = os.path.join(out, "mnist")
    os.makedirs(d, exist_ok=True)
    split = 1500
    write_idx(os.path.join(d, "train-images-idx3-ubyte"), images[:split])
    write_idx(os.path.join(d, "train-labels-idx1-ubyte"), labels[:split])
    write_idx(os.path.join(d, "t10k-images-idx3-ubyte"), images[split:])
    write_idx(os.path.join(d, "t10k-labels-idx1-ubyte"), labels[split:])


def make_cifar(out):
    # MindSpore reads exactly 10,000 records from every CIFAR-10 file (a shorter file is "Invalid
    # cifar10 file"), so each file is full size (30,730,000 bytes); two files keep it to 61 MB.
    rng = np.random.default_rng(17)
    d = os.path.join(out, "cifar10")
    os.makedirs(d, exist_ok=True)
    yy, xx = np.mgrid[0:32, 0:32]
    n = 10000
    for name in ["data_batch_1.bin", "test_batch.bin"]:
        labels = rng.integers(0, 10, n).astype(np.uint8)
        k = labels.astype(np.int64)[:, None, None]
        base = np.stack([(xx[None] * (k + 1) * 3) % 256, (yy[None] * 7 + k * 20) % 256,
                         np.broadcast_to(((xx + yy) * 4) % 256, (n, 32, 32))], axis=1)
        img = np.clip(base + rng.normal(0, 20, base.shape), 0, 255).astype(np.uint8)
        records = np.concatenate([labels[:, None], img.reshape(n, 3072)], axis=1)  # R, G, B planes
        records.tofile(os.path.join(d, name))


def make_imagefolder(out):
    from PIL import Image

    rng = np.random.default_rng(23)
    root = os.path.join(out, "imagefolder")
    specs = {
        "bird": [("b0.png", (40, 30), "RGB"), ("b1.jpg", (33, 47), "RGB"),
                 ("b2.png", (32, 32), "L")],
        "cat": [("c0.jpg", (50, 36), "RGB"), ("c1.png", (29, 41), "RGBA")],
        "dog": [("d0.png", (64, 48), "RGB"), ("d1.jpg", (31, 31), "RGB"),
                ("d2.jpeg", (45, 27), "L")],
    }
    for cls, files in specs.items():
        os.makedirs(os.path.join(root, cls), exist_ok=True)
        for name, (w, h), mode in files:
            yy, xx = np.mgrid[0:h, 0:w]
            rgb = np.stack([xx * 255 // max(w - 1, 1), yy * 255 // max(h - 1, 1),
                            (xx * yy) % 256], axis=-1).astype(np.float64)
            rgb = np.clip(rgb + rng.normal(0, 12, rgb.shape), 0, 255).astype(np.uint8)
            img = Image.fromarray(rgb, "RGB")
            if mode == "L":
                img = img.convert("L")
            elif mode == "RGBA":
                alpha = Image.fromarray((xx * 4 % 256).astype(np.uint8), "L")
                img.putalpha(alpha)
            path = os.path.join(root, cls, name)
            if name.endswith((".jpg", ".jpeg")):
                img.save(path, "JPEG", quality=90)
            else:
                img.save(path, "PNG")


def make_slices(out):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(10, 4)).astype(np.float32)
    y = np.arange(10, dtype=np.int32) % 3
    np.savez(os.path.join(out, "slices.npz"), x=x, y=y)
    np.savez_compressed(os.path.join(out, "slices_deflated.npz"), x=x, y=y)
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "y.npy"), y)
    # Random uint8 images for the Resize sweep (every pixel value, odd sizes).
    images = rng.integers(0, 256, (6, 37, 53, 3)).astype(np.uint8)
    np.savez(os.path.join(out, "images.npz"), image=images, label=np.arange(6, dtype=np.int32))


def make_encoder(out):
    rng = np.random.default_rng(29)
    n, length, features = 320, 16, 32
    y = rng.integers(0, 4, n).astype(np.int32)
    x = rng.normal(size=(n, length, features)).astype(np.float32)
    for c in range(4):
        x[y == c, :, c * 8:(c + 1) * 8] += 0.5
    d = os.path.join(out, "encoder")
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), y)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_data.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    make_mnist(out)
    make_cifar(out)
    make_imagefolder(out)
    make_slices(out)
    make_encoder(out)


if __name__ == "__main__":
    main()
