#!/usr/bin/env python3
"""`cellscope graph --format json` as a whole process against torch.fx in-process, on ResNet-50.

Both sides produce the same thing: the graph of ResNet-50's forward pass with every tensor's shape.
  cellscope: `cellscope graph tests/corpus/models/resnet50.py --entry "resnet50()" --format json
             -o FILE`, a new process each run (start-up, parse, evaluate, shape inference, JSON
             written to a file).
  torch.fx:  in one warm Python process, torchvision's resnet50 built on the meta device, then
             `symbolic_trace` + `ShapeProp(...).propagate(meta input)` each run (the model's
             construction is timed apart and not counted; the interpreter's start-up and the
             import of torch are not counted either: torch.fx is given every advantage).
Each side runs --runs times after --warmup runs, one after the other in this one process, on one
thread (torch.set_num_threads(1); cellscope's analysis is single-threaded). Reported: median
wall and median CPU time (user+system: of the child for cellscope, of this process for torch.fx),
and their ratio. CPU time is the figure to judge by on a shared machine.

Needs a PyPI build of torch and torchvision (not Debian's), e.g.
  python3 -m venv ~/.cache/cellscope/torchvenv
  ~/.cache/cellscope/torchvenv/bin/pip install torch torchvision
  ~/.cache/cellscope/torchvenv/bin/python bench/fx_compare.py --bin build/cellscope
"""
import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def self_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_cellscope(binary, model, entry, out):
    cmd = [binary, "graph", model, "--entry", entry, "--format", "json", "-o", out]
    c0, t0 = child_cpu(), time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0, child_cpu() - c0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "cellscope"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of markdown")
    args = ap.parse_args()

    import torch
    import torchvision
    from torch.fx import symbolic_trace
    from torch.fx.passes.shape_prop import ShapeProp

    torch.set_num_threads(1)
    model = os.path.join(REPO, "tests", "corpus", "models", "resnet50.py")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "resnet50.json")
        cs = []
        for i in range(args.warmup + args.runs):
            r = run_cellscope(args.bin, model, "resnet50()", out)
            if i >= args.warmup:
                cs.append(r)
        with open(out) as f:
            doc = json.load(f)
        cs_nodes = sum(len(c.get("nodes", [])) for c in doc["cells"])
        cs_bytes = os.path.getsize(out)

    fx, build = [], []
    nodes = 0
    for i in range(args.warmup + args.runs):
        b0 = time.perf_counter()
        with torch.device("meta"):
            net = torchvision.models.resnet50()
        b1 = time.perf_counter()
        c0, t0 = self_cpu(), time.perf_counter()
        gm = symbolic_trace(net)
        ShapeProp(gm).propagate(torch.empty(1, 3, 224, 224, device="meta"))
        r = (time.perf_counter() - t0, self_cpu() - c0)
        nodes = len(gm.graph.nodes)
        if i >= args.warmup:
            fx.append(r)
            build.append(b1 - b0)

    med = lambda xs, k: statistics.median(x[k] for x in xs) * 1000  # noqa: E731
    res = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}",
        "torch": torch.__version__,
        "runs": args.runs,
        "cellscope": {"wall_ms": med(cs, 0), "cpu_ms": med(cs, 1), "nodes": cs_nodes, "json_bytes": cs_bytes},
        "torch_fx": {"wall_ms": med(fx, 0), "cpu_ms": med(fx, 1), "nodes": nodes,
                     "model_build_ms": statistics.median(build) * 1000},
    }
    res["ratio_wall"] = res["cellscope"]["wall_ms"] / res["torch_fx"]["wall_ms"]
    res["ratio_cpu"] = res["cellscope"]["cpu_ms"] / res["torch_fx"]["cpu_ms"]
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"ResNet-50, {args.runs} runs after {args.warmup} warm-up; {res['machine']}; torch {res['torch']}\n")
    print("| | what is timed | graph nodes | wall ms (median) | CPU ms (median) |")
    print("| :-- | :-- | --: | --: | --: |")
    c, t = res["cellscope"], res["torch_fx"]
    print(f"| cellscope graph --format json | the whole process (start-up, analysis, {c['json_bytes'] // 1024} KB of JSON written) "
          f"| {c['nodes']} | {c['wall_ms']:.1f} | {c['cpu_ms']:.1f} |")
    print(f"| torch.fx (in-process) | symbolic_trace + ShapeProp on meta tensors (model built apart: {t['model_build_ms']:.1f} ms) "
          f"| {t['nodes']} | {t['wall_ms']:.1f} | {t['cpu_ms']:.1f} |")
    print(f"\ncellscope / torch.fx: wall {res['ratio_wall']:.2f}x, CPU {res['ratio_cpu']:.2f}x (goal: <= 0.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
