#!/usr/bin/env python3
"""Compares graphcore's dataset reader (build/bench/cellscope-dataset) with MindSpore 2.10.

    ~/.cache/cellscope/msvenv/bin/python tests/training/check_dataset.py [--bin PATH] [--data DIR]

Every case is one pipeline, written once as the JSON plan cellscope-dataset reads (see
bench/dataset_dump.cpp) and built from that same description in mindspore.dataset. The generated
data (tests/training/make_data.py) goes to a temporary directory unless --data names one. Batch by
batch: column names, dtypes and shapes always; values exactly for deterministic pipelines; Resize
within RESIZE_TOLERANCE (the measured maximum is printed); random transforms and shuffles only
shapes, dtypes and value ranges (the reader's RNG is its own). Exit status 1 on any mismatch.
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
# The largest |difference| allowed between our bilinear uint8 Resize and MindSpore's: it follows
# OpenCV's fixed-point arithmetic, and every sweep here measures 0 (docs/runtime.md).
RESIZE_TOLERANCE = 0

CIFAR_MEAN = [0.4914 * 255, 0.4822 * 255, 0.4465 * 255]
CIFAR_STD = [0.2470 * 255, 0.2435 * 255, 0.2616 * 255]


def cases(data):
    mnist = {"api": "dataset.MnistDataset",
             "args": {"dataset_dir": f"{data}/mnist", "usage": "train", "shuffle": False}}
    cifar = {"api": "dataset.Cifar10Dataset",
             "args": {"dataset_dir": f"{data}/cifar10", "usage": "train", "shuffle": False}}
    folder = {"api": "dataset.ImageFolderDataset",
              "args": {"dataset_dir": f"{data}/imagefolder", "decode": True, "shuffle": False}}

    def src(base, **args):
        return {"api": base["api"], "args": {**base["args"], **args}}

    def t(api, **args):
        return {"api": api, "args": args}

    def mp(col, *ops):
        return {"op": "map", "input_columns": [col], "operations": list(ops)}

    def op(name, **args):
        return {"op": name, "args": args}

    lenet = [mp("image", t("vision.Resize", size=[32, 32]), t("vision.Rescale", rescale=1 / 255, shift=0.0),
                t("vision.Rescale", rescale=1 / 0.3081, shift=-0.1307 / 0.3081), t("vision.HWC2CHW")),
             mp("label", t("transforms.TypeCast", data_type="mstype.int32")),
             op("batch", batch_size=32, drop_remainder=True)]
    return [
        # name, plan, mode ("exact", "resize", "random"), batches to compare
        ("mnist-raw-train", {"source": mnist, "ops": [op("batch", batch_size=64)]}, "exact", 4),
        ("mnist-all-order", {"source": src(mnist, usage="all"), "ops": [op("batch", batch_size=100)]},
         "exact", 3),
        ("mnist-test-remainder", {"source": src(mnist, usage="test"),
                                  "ops": [op("batch", batch_size=100, drop_remainder=False)]}, "exact", 10),
        ("mnist-normalize", {"source": mnist, "ops": [
            mp("image", t("vision.Rescale", rescale=1 / 255, shift=0.0),
               t("vision.Normalize", mean=[0.1307], std=[0.3081]), t("vision.HWC2CHW")),
            mp("label", t("transforms.TypeCast", data_type="mstype.int32")),
            op("batch", batch_size=32, drop_remainder=True)]}, "exact", 3),
        ("mnist-lenet-resize", {"source": mnist, "ops": lenet}, "resize", 3),
        ("mnist-take-repeat-project", {"source": src(mnist, usage="test"), "ops": [
            op("take", count=5), op("repeat", count=2), op("batch", batch_size=3),
            {"op": "project", "columns": ["label"]}]}, "exact", 10),
        ("mnist-onehot", {"source": src(mnist, usage="test"), "ops": [
            mp("label", t("transforms.TypeCast", data_type="int32"), t("transforms.OneHot", num_classes=10)),
            op("batch", batch_size=50)]}, "exact", 2),
        ("cifar-normalize", {"source": cifar, "ops": [
            mp("image", t("vision.Normalize", mean=CIFAR_MEAN, std=CIFAR_STD), t("vision.HWC2CHW")),
            mp("label", t("transforms.TypeCast", data_type="mstype.int32")),
            op("batch", batch_size=16, drop_remainder=True)]}, "exact", 3),
        ("cifar-test-crop", {"source": src(cifar, usage="test"), "ops": [
            mp("image", t("vision.CenterCrop", size=24), t("vision.Rescale", rescale=1 / 255, shift=0.0)),
            op("batch", batch_size=16)]}, "exact", 2),
        ("cifar-all-resize", {"source": src(cifar, usage="all"), "ops": [
            mp("image", t("vision.Resize", size=[40, 36])), op("batch", batch_size=16)]}, "resize", 2),
        ("cifar-random", {"source": src(cifar, shuffle=True), "ops": [
            mp("image", t("vision.RandomCrop", size=[32, 32], padding=[4, 4, 4, 4]),
               t("vision.RandomHorizontalFlip", prob=0.5), t("vision.Rescale", rescale=1 / 255, shift=0.0),
               t("vision.HWC2CHW")),
            op("shuffle", buffer_size=64), op("batch", batch_size=32, drop_remainder=True)]}, "random", 3),
        ("imagefolder-decode", {"source": folder, "ops": []}, "exact", 8),
        ("imagefolder-resize", {"source": folder, "ops": [
            mp("image", t("vision.Resize", size=[24, 20]), t("vision.HWC2CHW")), op("batch", batch_size=4)]},
         "resize", 2),
        ("imagefolder-resize-short-side", {"source": folder, "ops": [mp("image", t("vision.Resize", size=17))]},
         "resize", 8),
        ("imagefolder-nearest-centercrop", {"source": folder, "ops": [
            mp("image", t("vision.Resize", size=[33, 35], interpolation="Inter.NEAREST"),
               t("vision.CenterCrop", size=[31, 40])), op("batch", batch_size=8)]}, "exact", 1),
        ("imagefolder-float-resize", {"source": folder, "ops": [
            mp("image", t("vision.Rescale", rescale=1 / 255, shift=0.0), t("vision.Resize", size=[21, 19])),
            op("batch", batch_size=8)]}, "float", 1),
        ("npz-stored", {"source": {"api": "dataset.NumpySlicesDataset",
                                   "args": {"data": f"{data}/slices.npz", "shuffle": False}},
                        "ops": [op("batch", batch_size=3)]}, "exact", 4),
        ("npz-deflated-onehot", {"source": {"api": "dataset.NumpySlicesDataset",
                                            "args": {"data": f"{data}/slices_deflated.npz", "shuffle": False}},
                                 "ops": [mp("y", t("transforms.OneHot", num_classes=3)),
                                         mp("x", t("transforms.TypeCast", data_type="float16")),
                                         op("batch", batch_size=4, drop_remainder=True)]}, "exact", 2),
        ("npy-columns", {"source": {"api": "dataset.NumpySlicesDataset",
                                    "args": {"data": f"{data}/x.npy;{data}/y.npy",
                                             "column_names": ["data", "label"], "shuffle": False}},
                         "ops": [op("batch", batch_size=5)]}, "exact", 2),
        *[(f"resize-sweep-{h}x{w}", {"source": {"api": "dataset.NumpySlicesDataset",
                                                  "args": {"data": f"{data}/images.npz", "shuffle": False}},
                                       "ops": [mp("image", t("vision.Resize", size=[h, w])),
                                               op("batch", batch_size=6)]}, "resize", 1)
          for h, w in [(16, 20), (60, 81), (37, 29), (5, 106), (74, 53)]],
        ("npz-shuffled", {"source": {"api": "dataset.NumpySlicesDataset",
                                     "args": {"data": f"{data}/slices.npz"}},
                          "ops": [op("repeat", count=2), op("batch", batch_size=4)]}, "random", 5),
    ]


def ms_pipeline(plan):
    import mindspore as ms
    import mindspore.dataset as ds
    import mindspore.dataset.transforms as transforms
    import mindspore.dataset.vision as vision

    def transform(c):
        args = dict(c["args"])
        name = c["api"].split(".")[-1]
        if "interpolation" in args:
            args["interpolation"] = getattr(vision.Inter, args["interpolation"].split(".")[-1])
        if "data_type" in args:
            args["data_type"] = getattr(ms, args["data_type"].split(".")[-1])
        if isinstance(args.get("size"), list):
            args["size"] = tuple(args["size"])
        module = vision if c["api"].startswith("vision.") else transforms
        return getattr(module, name)(**args)

    src = plan["source"]
    args = dict(src["args"])
    name = src["api"].split(".")[-1]
    if name == "NumpySlicesDataset":
        paths = args.pop("data").split(";")
        if len(paths) == 1 and paths[0].endswith(".npz"):
            z = np.load(paths[0])
            args["data"] = {k: z[k] for k in z.files}
        else:
            args["data"] = tuple(np.load(p) for p in paths)
    d = getattr(ds, name)(**args)
    for o in plan["ops"]:
        if o["op"] == "map":
            d = d.map(operations=[transform(c) for c in o["operations"]], input_columns=o["input_columns"])
        elif o["op"] == "project":
            d = d.project(o["columns"])
        else:
            d = getattr(d, o["op"])(**o["args"])
    return d


def run_case(binary, name, plan, mode, n, work):
    case_dir = os.path.join(work, name)
    os.makedirs(case_dir)
    plan_file = os.path.join(case_dir, "plan.json")
    with open(plan_file, "w") as f:
        json.dump(plan, f)
    proc = subprocess.run([binary, plan_file, "--out", case_dir, "--batches", str(n), "--seed", "7"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return [f"cellscope-dataset failed: {proc.stderr.strip()}"], 0
    ours = json.loads(proc.stdout)
    d = ms_pipeline(plan)
    problems = []
    if ours["columns"] != d.get_col_names():
        problems.append(f"columns {ours['columns']} != MindSpore {d.get_col_names()}")
    if ours["batches_per_epoch"] != d.get_dataset_size():
        problems.append(f"batches per epoch {ours['batches_per_epoch']} != MindSpore {d.get_dataset_size()}")
    max_diff = 0
    count = 0
    ranges = {}
    for b, row in enumerate(d.create_tuple_iterator(output_numpy=True, num_epochs=1)):
        if b >= n:
            break
        count += 1
        for col, ms_arr in zip(ours["columns"], row):
            path = os.path.join(case_dir, f"{b}_{col}.npy")
            if not os.path.exists(path):
                problems.append(f"batch {b}: ours has no column {col}")
                continue
            arr = np.load(path)
            where = f"batch {b} column {col}"
            if arr.dtype != ms_arr.dtype or arr.shape != ms_arr.shape:
                problems.append(f"{where}: {arr.dtype}{arr.shape} != MindSpore {ms_arr.dtype}{ms_arr.shape}")
                continue
            if mode == "random":
                if arr.size:  # ranges over all compared batches (the rows differ batch by batch)
                    lo, hi, mlo, mhi = ranges.get(col, (np.inf, -np.inf, np.inf, -np.inf))
                    ranges[col] = (min(lo, float(arr.min())), max(hi, float(arr.max())),
                                   min(mlo, float(ms_arr.min())), max(mhi, float(ms_arr.max())))
                continue
            diff = float(np.max(np.abs(arr.astype(np.float64) - ms_arr.astype(np.float64)))) if arr.size else 0.0
            max_diff = max(max_diff, diff)
            limit = {"exact": 0.0, "resize": RESIZE_TOLERANCE, "float": 1e-5}[mode]
            if arr.dtype.kind == "f" and mode != "float":
                limit = 1e-6 * max(1.0, float(np.max(np.abs(ms_arr))))  # float32 rounding order
            if diff > limit:
                problems.append(f"{where}: max |difference| {diff} > {limit}")
    for col, (lo, hi, mlo, mhi) in ranges.items():
        if lo < mlo - 1e-6 * max(1.0, abs(mlo)) or hi > mhi + 1e-6 * max(1.0, abs(mhi)):
            problems.append(f"column {col}: range [{lo}, {hi}] outside MindSpore's [{mlo}, {mhi}]")
    if count != min(n, ours["written"]) or ours["written"] != min(n, count):
        problems.append(f"{ours['written']} batches written, MindSpore gave {count}")
    return problems, max_diff


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bench", "cellscope-dataset"))
    ap.add_argument("--data", help="reuse generated data (make_data.py) in this directory")
    args = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="cellscope_dataset_") as work:
        data = args.data
        if not data:
            data = os.path.join(work, "data")
            subprocess.run([sys.executable, os.path.join(HERE, "make_data.py"), data], check=True)
        for name, plan, mode, n in cases(data):
            problems, diff = run_case(args.bin, name, plan, mode, n, work)
            status = "ok" if not problems else "FAIL"
            print(f"{status:4} {name:32} {mode:7} max|diff|={diff:g}")
            for p in problems[:10]:
                print(f"     {p}")
            failed += bool(problems)
    print(f"{failed} of {len(cases('.'))} cases failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
