#!/usr/bin/python3
"""Runtime benchmark: graphcore's CPU runtime (cellscope-run --bench) next to PyTorch at the same
thread count (1), on ResNet-50 batch 1 and LeNet-5 batch 64 forward, plus the debugger-hook
overhead with no breakpoints. Run with Debian's /usr/bin/python3 (python3-torch):

  /usr/bin/python3 bench/runtime_bench.py [--bin build-rt/bench/cellscope-run] [--runs N]

PyTorch runs the same graph with the same weights: LeNet-5 as an explicit torch.nn module,
ResNet-50 through tests/runtime/check_torch.py's per-node torch calls (F.conv2d, F.batch_norm...),
under torch.no_grad() with torch.set_num_threads(1). Eigen is single-threaded (no OpenMP).
Prints a markdown table (the one recorded in docs/benchmarks.md).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "runtime"))
import check_torch  # noqa: E402

MODELS = [
    ("ResNet-50", "tests/corpus/models/resnet50.py", "1,3,224,224"),
    ("LeNet-5", "tests/corpus/models/lenet5.py", "64,1,32,32"),
]


def torch_graph_fn(out):
    g = json.load(open(os.path.join(out, "graph.json")))
    params = {p["name"]: check_torch.load(os.path.join(out, "params", p["name"] + ".npy"))
              for p in g["params"]}
    x = check_torch.load(os.path.join(out, "inputs", "0.npy"))
    nodes = g["nodes"]

    def run():
        vals = {}
        for n in nodes:
            if n["kind"] == "input":
                vals[(n["index"], 0)] = x
                continue
            outs = check_torch.run_op(n, [vals[(a, b)] for a, b in n["inputs"]],
                                      [params[q] for q in n["params"]])
            for k, t in enumerate(outs):
                vals[(n["index"], k)] = t
        return [vals[(a, b)] for a, b in g["outputs"]]

    return run, params, x


def time_fn(fn, runs):
    fn()  # warm-up
    ms = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms), min(ms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-rt", "bench", "cellscope-run"))
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()
    torch.set_num_threads(1)
    work = tempfile.mkdtemp(prefix="cellscope-rtbench-")
    rows = []
    for name, model, shape in MODELS:
        path = os.path.join(ROOT, model)
        r = subprocess.run([a.bin, path, "--input-shape", shape, "--bench", str(a.runs)],
                           capture_output=True, text=True, check=True)
        ours = json.loads(r.stdout.strip().splitlines()[-1])
        out = os.path.join(work, name)
        subprocess.run([a.bin, path, "--input-shape", shape, "--out", out], capture_output=True,
                       check=True)
        fn, params, x = torch_graph_fn(out)
        if name == "LeNet-5":
            net = check_torch.TorchLeNet5(params).eval()
            fn = lambda: net(x)  # noqa: E731
        with torch.no_grad():
            t_med, t_min = time_fn(fn, 2 * a.runs)
        rows.append((name, shape, ours, t_med, t_min))
    print(f"Machine: {platform.processor() or platform.machine()}, torch {torch.__version__} "
          f"(threads {torch.get_num_threads()}), {a.runs * 2} timed runs each (median)\n")
    print("| model | input | graphcore runtime ms | + no-op hooks ms | hook overhead | "
          "PyTorch ms | runtime / PyTorch |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, shape, ours, t_med, _ in rows:
        print(f"| {name} | {shape} | {ours['plain_ms_median']:.2f} | "
              f"{ours['hooked_ms_median']:.2f} | {ours['hook_overhead_pct']:+.1f}% | "
              f"{t_med:.2f} | {ours['plain_ms_median'] / t_med:.2f}x |")


if __name__ == "__main__":
    main()
