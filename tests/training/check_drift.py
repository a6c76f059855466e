#!/usr/bin/env python3
"""The precision drift of `cellscope train --drift` against an independent recomputation (issue 19).

    ~/.cache/cellscope/msvenv/bin/python tests/training/check_drift.py [--bin build/cellscope]

`cellscope train tests/training/scripts/drift_convnet.py --steps N -o OUT.ckpt --drift P --format
json` trains the small conv net on the generated digits (tests/training/make_data.py) and prints
its per-layer drift. Here the same weights (read back with MindSpore's own load_checkpoint) run
on the same batches (the test split, t10k, in file order: the script trains on usage='train')
in numpy, at float32 and with this file's own emulation of the precision, written from the rules
of docs/precision.md and not from graphcore's code:
  target: every tensor rounded to fp16 (numpy float16: round to nearest even, overflow to inf),
          weights fp16 except BatchNorm's (amp keeps it in float32), products summed in float64
          then rounded to fp16;
  int8:   weights per output channel symmetric (scale max|w|/127, levels -127..127), the inputs of
          Conv2D and Dense per tensor asymmetric from the range the calibration method picks on
          the float32 run over the calibration batches (min/max; the 99.99 % percentile of a
          2048-bin histogram; the KL-divergence threshold of TensorRT / MindSpore Lite on a
          2048-bin histogram of |x|, written here as an overlap matrix of bins and levels), the
          range widened to hold 0, scale (max-min)/255, zero point round(-128 - min/scale),
          rounding half away from zero, integer sums in int64 (exact, as int32 accumulation is),
          the bias added as an integer at scale s_x * s_w, then scaled back.
          The table `--quant-table` writes is checked too: each quantised input's range against
          the one computed here (within 2 histogram bins: each side bins its own float32 run).
Both sides' numbers (max abs, max rel, cosine per layer, top-1 agreement, accuracies) must agree
within TOLERANCES. Exit status 1 on a mismatch.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(HERE, "scripts", "drift_convnet.py")
BATCH = 32
EPS_BN = 1e-5

# How far the two implementations may be apart, and why: the float32 runs differ by float32
# rounding (oneDNN's summation order against numpy's float64 sums), so an element whose value
# lies within that of a rounding boundary (an fp16 rounding tie, an int8 level boundary) can
# round the other way on one side and move by one fp16 ulp or one int8 step; and the int8
# calibration ranges come from each side's own float32 run.
#   max_abs, max_rel: relative 0.02 (measured: at most 0.2 %, fc2's max_rel in target);
#   1 - cosine: relative 0.01 or 1e-9 absolute (measured: 4e-4 relative);
#   top-1 agreement and accuracies: one sample (measured: equal).
REL = 0.02
COS_REL = 0.01
COS_ABS = 1e-9
SAMPLES = 1


def read_idx(path):
    with open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw[4 + 4 * ndim:], dtype=np.uint8).reshape(dims)


def batches(data_dir):
    images = read_idx(os.path.join(data_dir, "t10k-images-idx3-ubyte"))
    labels = read_idx(os.path.join(data_dir, "t10k-labels-idx1-ubyte")).astype(np.int64)
    # Rescale(1/255, 0) in float32 as MindSpore computes it, then HWC2CHW.
    x = images.astype(np.float32) * np.float32(1.0 / 255.0) + np.float32(0.0)
    x = x[:, None, :, :]
    for b in range(len(x) // BATCH):
        yield x[b * BATCH:(b + 1) * BATCH], labels[b * BATCH:(b + 1) * BATCH]


def half(v):
    return np.asarray(v, dtype=np.float32).astype(np.float16).astype(np.float32)


def round_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def conv3x3(x, w, b):
    # x (N, C, H, W), w (O, C, 3, 3), valid padding, stride 1: sums in float64.
    n, c, h, wd = x.shape
    cols = np.stack([x[:, :, i:i + h - 2, j:j + wd - 2] for i in range(3) for j in range(3)],
                    axis=2)  # (N, C, 9, H-2, W-2)
    out = np.einsum("bckhw,ock->bohw", cols.astype(np.float64),
                    w.reshape(w.shape[0], c, 9).astype(np.float64))
    return out + b.astype(np.float64)[None, :, None, None]


def dense(x, w, b):
    return x.astype(np.float64) @ w.astype(np.float64).T + b.astype(np.float64)


def maxpool2(x):
    n, c, h, w = x.shape
    return x[:, :, :h // 2 * 2, :w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def batchnorm(x, p):
    inv = np.float32(1.0) / np.sqrt(p["bn1.moving_variance"] + np.float32(EPS_BN))
    return ((x - p["bn1.moving_mean"][None, :, None, None]) * (inv * p["bn1.gamma"])[None, :, None, None]
            + p["bn1.beta"][None, :, None, None]).astype(np.float32)


def forward(x, p, mode, quant=None, observe=None):
    """Every layer's output, by the layer's name; mode fp32 | target | int8."""
    f32 = lambda v: np.asarray(v, dtype=np.float32)  # noqa: E731
    out = {}
    if mode == "target":
        r = half
        w = {k: (v if k.startswith("bn1.") else half(v)) for k, v in p.items()}
        x = half(x)
    else:
        r = f32
        w = p

    def gemm_input(name, v):
        if observe is not None:
            observe.setdefault(name, []).append(np.asarray(v, dtype=np.float32).ravel())
        return v

    def int8_layer(name, v, weight, bias, fn):
        scale, zp = quant[name]
        qx = np.clip(round_away(v.astype(np.float64) / scale) + zp, -128, 127) - zp
        wmax = np.abs(weight.reshape(weight.shape[0], -1)).max(axis=1).astype(np.float64)
        ws = wmax / 127.0
        shape = (-1,) + (1,) * (weight.ndim - 1)
        qw = np.clip(round_away(weight.astype(np.float64) / np.where(ws > 0, ws, 1).reshape(shape)),
                     -127, 127)
        acc = fn(qx.astype(np.int64), qw.astype(np.int64))  # exact integer sums
        chan = ws * scale
        # The bias as an integer at scale s_x * s_w (a channel of scale 0 keeps its float bias).
        bq = np.where(chan > 0, round_away(bias.astype(np.float64) / np.where(chan > 0, chan, 1)), 0)
        out = (acc + bq.reshape((1, -1) + (1,) * (acc.ndim - 2))) * chan.reshape((1, -1) + (1,) * (acc.ndim - 2))
        b32 = bias.astype(np.float32).reshape((1, -1) + (1,) * (acc.ndim - 2))
        return np.where(chan.reshape((1, -1) + (1,) * (acc.ndim - 2)) > 0, f32(out), b32)

    def int_conv(qx, qw):
        n, c, h, wd = qx.shape
        cols = np.stack([qx[:, :, i:i + h - 2, j:j + wd - 2] for i in range(3) for j in range(3)],
                        axis=2)
        return np.einsum("bckhw,ock->bohw", cols, qw.reshape(qw.shape[0], c, 9))

    v = gemm_input("conv1", x)
    if mode == "int8":
        v = int8_layer("conv1", v, w["conv1.weight"], w["conv1.bias"], int_conv)
    else:
        v = r(conv3x3(v, w["conv1.weight"], w["conv1.bias"]))
    out["conv1"] = v
    v = r(batchnorm(v, w))
    out["bn1"] = v
    v = np.maximum(v, 0)
    out["relu"] = v
    v = maxpool2(v)
    out["pool"] = v
    v = v.reshape(v.shape[0], -1)
    out["flatten"] = v
    v = gemm_input("fc1", v)
    if mode == "int8":
        v = int8_layer("fc1", v, w["fc1.weight"], w["fc1.bias"], lambda a, b: a @ b.T)
    else:
        v = r(dense(v, w["fc1.weight"], w["fc1.bias"]))
    out["fc1"] = v
    v = np.maximum(v, 0)
    out["relu2"] = v
    v = gemm_input("fc2", v)
    if mode == "int8":
        v = int8_layer("fc2", v, w["fc2.weight"], w["fc2.bias"], lambda a, b: a @ b.T)
    else:
        v = r(dense(v, w["fc2.weight"], w["fc2.bias"]))
    out["fc2"] = v
    return out


BINS = 2048
PERCENT = 99.99


def kl_threshold_bins(hist):
    """The entropy calibration's threshold bin count: for each candidate i in [128, bins], P = the
    first i bins with the rest folded into bin i-1, Q = those i bins (without the fold) merged
    into 128 equal levels (a bin cut by a level edge split by its overlap) and spread back evenly
    over the non-empty bins of each level; the i with the smallest KL(P || Q), counting 1 for a
    bin P has and Q does not (MindSpore Lite's rule)."""
    bins = len(hist)
    if bins <= 128 or np.count_nonzero(hist) < 128:  # few distinct values: the whole range
        return bins
    best, best_kl = 128, np.inf
    for i in range(128, bins + 1):
        h = hist[:i].astype(np.float64)
        p = h.copy()
        p[-1] += hist[i:].sum()
        w = i / 128.0
        edges = np.arange(129) * w
        k = np.arange(i)
        # overlap[j, k]: how much of bin [k, k+1) lies in level [edges[j], edges[j+1]).
        overlap = np.clip(np.minimum(k[None, :] + 1, edges[1:, None]) -
                          np.maximum(k[None, :], edges[:-1, None]), 0, None)
        nz = (h != 0).astype(np.float64)
        q = overlap @ h
        support = overlap @ nz
        avg = np.divide(q, support, out=np.zeros_like(q), where=support > 0)
        expanded = (overlap * nz[None, :] * avg[:, None]).sum(axis=0)
        if p.sum() <= 0 or expanded.sum() <= 0:
            continue
        pn, qn = p / p.sum(), expanded / expanded.sum()
        m = pn > 0
        terms = np.where(qn[m] > 0, pn[m] * np.log(pn[m] / np.where(qn[m] > 0, qn[m], 1)), 1.0)
        kl = terms.sum()
        if kl < best_kl:
            best, best_kl = i, kl
    return best


def calibrated_range(values, method):
    """(lo, hi, bin width) of one activation tensor's calibration values."""
    v = np.concatenate(values).astype(np.float64)
    v = v[np.isfinite(v)]
    lo, hi = float(v.min()), float(v.max())
    if method == "minmax":
        return lo, hi, 0.0
    if method == "percentile":
        span = hi - lo
        idx = np.clip(np.floor((v - lo) * (BINS / span)).astype(np.int64), 0, BINS - 1)
        hist = np.bincount(idx, minlength=BINS).astype(np.float64)
        width = span / BINS
        target = PERCENT / 100.0 * hist.sum()
        top = lo + (int(np.argmax(np.cumsum(hist) >= target)) + 1) * width
        from_top = np.cumsum(hist[::-1])
        bottom = lo + (BINS - 1 - int(np.argmax(from_top >= target))) * width
        return max(bottom, lo), min(top, hi), width
    amax = max(abs(lo), abs(hi))
    width = amax / BINS
    a = np.abs(v[v != 0])
    idx = np.minimum(np.floor(a / width).astype(np.int64), BINS - 1)
    hist = np.bincount(idx, minlength=BINS).astype(np.float64)
    t = (kl_threshold_bins(hist) + 0.5) * width
    return max(lo, -t), min(hi, t), width


def activation_quant(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0
    zp = float(np.clip(round_away(-128.0 - lo / scale), -128, 127))
    return scale, zp


class Stats:
    def __init__(self):
        self.dot = self.pp = self.rr = 0.0
        self.max_abs = self.max_rel = 0.0

    def add(self, ref, got):
        ref = ref.astype(np.float64).ravel()
        got = got.astype(np.float64).ravel()
        d = np.abs(got - ref)
        rmax = np.abs(ref).max()
        guard = 1e-3 * rmax if rmax > 0 else 1e-30
        self.max_abs = max(self.max_abs, float(d.max()))
        self.max_rel = max(self.max_rel, float((d / np.maximum(np.abs(ref), guard)).max()))
        self.dot += float(ref @ got)
        self.pp += float(got @ got)
        self.rr += float(ref @ ref)

    def cosine(self):
        if self.pp == 0 and self.rr == 0:
            return 1.0
        if self.pp == 0 or self.rr == 0:
            return 0.0
        return self.dot / np.sqrt(self.pp * self.rr)


# The script's layers in the forward graph's ids (cellscope's Node::id) and ours.
LAYERS = None  # filled from the report's order: checked against EXPECTED_OPS
EXPECTED_OPS = ["Conv2D", "BatchNorm", "ReLU", "MaxPool", "Flatten", "MatMul", "ReLU", "MatMul"]
OURS = ["conv1", "bn1", "relu", "pool", "flatten", "fc1", "relu2", "fc2"]


def recompute(params, data_dir, precision, eval_batches, calibration_batches, method="minmax"):
    it = batches(data_dir)
    quant = None
    ranges = {}
    if precision == "int8":
        observe = {}
        for _ in range(calibration_batches):
            x, _ = next(it)
            forward(x, params, "fp32", observe=observe)
        # conv1 reads the network's input: calibrated by min/max under every method (the
        # data's own range; docs/precision.md).
        ranges = {k: calibrated_range(v, "minmax" if k == "conv1" else method)
                  for k, v in observe.items()}
        quant = {k: activation_quant(lo, hi) for k, (lo, hi, _) in ranges.items()}
    stats = {k: Stats() for k in OURS}
    agree = correct_ref = correct_prec = samples = 0
    for _ in range(eval_batches):
        x, y = next(it)
        ref = forward(x, params, "fp32")
        got = forward(x, params, precision, quant=quant)
        for k in OURS:
            stats[k].add(ref[k], got[k])
        ar, ap = ref["fc2"].argmax(axis=1), got["fc2"].argmax(axis=1)
        agree += int((ar == ap).sum())
        correct_ref += int((ar == y).sum())
        correct_prec += int((ap == y).sum())
        samples += len(y)
    return (stats, agree / samples, correct_ref / samples, correct_prec / samples, samples,
            ranges)


def check_table(table, ranges, method):
    """The --quant-table file against the ranges computed here."""
    errors = []
    if table.get("format") != "cellscope-quant-table" or table.get("version") != 1:
        return [f"the table's format/version: {table.get('format')} {table.get('version')}"]
    if table["calibration"]["method"] != method:
        errors.append(f"table method {table['calibration']['method']} vs {method}")
    by_node = {n["node"]: n for n in table["nodes"]}
    for name, (lo, hi, width) in ranges.items():
        if name not in by_node:
            errors.append(f"{name} is not in the table ({sorted(by_node)})")
            continue
        got = by_node[name]["inputs"][0]
        tol = 2 * width + 1e-5 * max(abs(lo), abs(hi))
        print(f"  {name:6} range [{got['min']:.6g}, {got['max']:.6g}] / [{lo:.6g}, {hi:.6g}]"
              f" (bin {width:.3g})")
        if abs(got["min"] - lo) > tol or abs(got["max"] - hi) > tol:
            errors.append(f"{name}: table range [{got['min']}, {got['max']}] vs [{lo}, {hi}]")
        scale, zp = activation_quant(got["min"], got["max"])
        if abs(got["scale"] - scale) > 1e-12 * scale or got["zero_point"] != zp:
            errors.append(f"{name}: table scale/zero point {got['scale']}/{got['zero_point']} are "
                          f"not those of its own range ({scale}/{zp})")
    return errors


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-12


def check(report, stats, agree, acc_ref, acc_prec, samples):
    errors = []
    layers = report["layers"]
    ops = [entry["op"] for entry in layers]
    if len(layers) != len(OURS):
        return [f"the report has {len(layers)} layers ({ops}), expected {len(OURS)}"]
    print(f"{'layer':10} {'op':10} {'max abs (c / py)':>26} {'max rel (c / py)':>26} "
          f"{'1-cos (c / py)':>24}")
    for entry, ours in zip(layers, OURS):
        s = stats[ours]
        c1, p1 = 1 - entry["cosine"], 1 - s.cosine()
        print(f"{entry['node']:10} {entry['op']:10} {entry['max_abs']:12.4e} / {s.max_abs:11.4e}"
              f"  {entry['max_rel']:12.4e} / {s.max_rel:11.4e}  {c1:10.3e} / {p1:10.3e}")
        if not close(entry["max_abs"], s.max_abs, REL):
            errors.append(f"{entry['node']}: max_abs {entry['max_abs']} vs {s.max_abs}")
        if not close(entry["max_rel"], s.max_rel, REL):
            errors.append(f"{entry['node']}: max_rel {entry['max_rel']} vs {s.max_rel}")
        if abs(c1 - p1) > max(COS_REL * max(c1, p1), COS_ABS):
            errors.append(f"{entry['node']}: cosine {entry['cosine']} vs {s.cosine()}")
    print(f"top-1 agreement {report['top1_agreement']} / {agree}; accuracy fp32 "
          f"{report['accuracy_fp32']} / {acc_ref}, precision {report['accuracy_precision']} / "
          f"{acc_prec}; samples {report['samples']} / {samples}")
    if report["samples"] != samples:
        errors.append(f"samples {report['samples']} vs {samples}")
    tol = SAMPLES / samples + 1e-9
    for name, a, b in (("top1_agreement", report["top1_agreement"], agree),
                       ("accuracy_fp32", report["accuracy_fp32"], acc_ref),
                       ("accuracy_precision", report["accuracy_precision"], acc_prec)):
        if a is None or abs(a - b) > tol:
            errors.append(f"{name} {a} vs {b}")
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "cellscope"))
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    import mindspore as ms  # reads cellscope's checkpoint: MindSpore's own reader

    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(HERE, "make_data.py"), tmp], check=True,
                       stdout=subprocess.DEVNULL)
        data = os.path.join(tmp, "mnist")
        for precision, steps, method in (("target", args.steps, ""),
                                         ("int8", args.steps, "minmax"),
                                         ("int8", args.steps, "percentile"),
                                         ("int8", args.steps, "kl"),
                                         ("int8", 0, "minmax")):
            ckpt = os.path.join(tmp, f"{precision}_{steps}_{method}.ckpt")
            table_file = os.path.join(tmp, f"{precision}_{steps}_{method}.json")
            cmd = [args.bin, "train", SCRIPT, "--data", data, "--steps", str(steps), "-o", ckpt,
                   "--drift", precision, "--eval-batches", "4", "--calibration-batches", "3",
                   "--format", "json"]
            if method:
                cmd += ["--calibration", method, "--percentile", str(PERCENT),
                        "--quant-table", table_file]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                failures.append(f"{' '.join(cmd)} failed: {r.stderr[-2000:]}")
                continue
            report = json.loads(r.stdout)["drift"]
            params = {k: v.asnumpy().astype(np.float32)
                      for k, v in ms.load_checkpoint(ckpt).items() if not k.startswith("moments")}
            print(f"\n== {precision} {method}, {steps} steps ({report['data']})")
            stats, agree, acc_ref, acc_prec, samples, ranges = recompute(
                params, data, precision, 4, 3, method or "minmax")
            errs = check(report, stats, agree, acc_ref, acc_prec, samples)
            if method:
                with open(table_file) as f:
                    errs += check_table(json.load(f), ranges, method)
            failures += [f"{precision}/{method}/{steps}: {e}" for e in errs]
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        return 1
    print("\nall drift numbers agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
