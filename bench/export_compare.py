#!/usr/bin/env python3
"""`cellscope export` against `mindspore.export`: wall time and peak RSS (issue 18, docs/benchmarks.md).

    python3 bench/export_compare.py --bin build/cellscope [--runs 3] [--models resnet50,bert_base]
        [--formats mindir,onnx] [--python ~/.cache/cellscope/msvenv/bin/python]

For each model, MindSpore 2.10 (the msvenv) builds the Cell once and saves its initialised weights
with mindspore.save_checkpoint; both sides then export those same weights:
  * MindSpore: a fresh process builds the Cell, load_checkpoint + load_param_into_net, then times
    `mindspore.export(net, x, file_name=..., file_format=MINDIR|ONNX)` alone;
  * Cellscope: `cellscope export MODEL --checkpoint CKPT -o OUT`, the whole process (parse,
    compile, bind the weights, load the checkpoint, write atomically).
Peak RSS is each process's own ru_maxrss (os.wait4, one process per run); MindSpore's also as the
growth during the export call (peak minus the RSS just before it). Figures are medians over
--runs. A side that refuses or fails is shown as such (BERT-base MindIR needs the Gather /
NotEqual / Range / ZerosLike rows: the row fills in once they exist). Everything is written in a
temporary directory removed at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "corpus" / "models"
DEFAULT_PY = Path.home() / ".cache" / "cellscope" / "msvenv" / "bin" / "python"

MODELS = {
    # name: corpus file, MindSpore cell expression, cellscope selection, input (shape, dtype)
    "resnet50": ("resnet50.py", "resnet50()", ["--entry", "resnet50()"], ((1, 3, 224, 224), "float32")),
    "bert_base": ("bert_base.py", "bert_base()", ["--entry", "bert_base()"], ((1, 128), "int32")),
}

# Runs in the msvenv: MODE ckpt -> save the initialised weights; MODE export -> time ms.export.
MS_CHILD = r'''
import json, sys, time, importlib.util, resource
import numpy as np
import mindspore as ms
mode, corpus_file, cell, shape, dtype, ckpt, out, fmt = sys.argv[1:9]
ms.set_context(mode=ms.GRAPH_MODE)
ms.set_device("CPU")
spec = importlib.util.spec_from_file_location("bench_model", corpus_file)
mod = importlib.util.module_from_spec(spec)
sys.modules["bench_model"] = mod
spec.loader.exec_module(mod)
ms.set_seed(0)
net = eval(cell, vars(mod))
net.set_train(False)
def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
if mode == "ckpt":
    ms.save_checkpoint(net, ckpt)
    nbytes = sum(p.data.asnumpy().nbytes for p in net.get_parameters())
    print(json.dumps({"weights_bytes": nbytes}))
    sys.exit(0)
ms.load_param_into_net(net, ms.load_checkpoint(ckpt))
dims = tuple(int(d) for d in shape.split(","))
x = ms.Tensor(np.ones(dims, dtype=dtype))
before = rss_mb()
t0 = time.perf_counter()
ms.export(net, x, file_name=out, file_format=fmt)
dt = time.perf_counter() - t0
print(json.dumps({"export_s": dt, "rss_before_mb": before}))
'''


def run_measured(cmd, cwd, log):
    """(exit status, wall seconds, peak RSS MB, stdout) of one process."""
    with open(log, "w") as err, tempfile.TemporaryFile("w+") as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return p.returncode, wall, usage.ru_maxrss / 1024.0, out.read()


def size_of(path: Path) -> int:
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return path.stat().st_size if path.exists() else 0


def outputs(work: Path, stem: str):
    return [p for p in work.iterdir() if p.name.startswith(stem)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=str(REPO / "build" / "cellscope"))
    ap.add_argument("--python", default=str(DEFAULT_PY))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--models", default="resnet50,bert_base")
    ap.add_argument("--formats", default="mindir,onnx")
    ap.add_argument("--skip-mindspore", action="store_true", help="Cellscope's side only")
    args = ap.parse_args()
    args.bin = str(Path(args.bin).resolve())
    work = Path(tempfile.mkdtemp(prefix="cellscope-export-bench-"))
    rows = []
    try:
        for name in args.models.split(","):
            corpus_file, cell, select, (shape, dtype) = MODELS[name]
            model = CORPUS / corpus_file
            ckpt = work / (name + ".ckpt")
            shape_s = ",".join(str(d) for d in shape)
            code, _, _, out = run_measured(
                [args.python, "-c", MS_CHILD, "ckpt", str(model), cell, shape_s, dtype, str(ckpt),
                 "-", "-"], work, work / "ckpt.log")
            if code != 0:
                print(f"{name}: saving the checkpoint failed:\n" + (work / "ckpt.log").read_text()[-2000:])
                return 1
            weights_mb = json.loads(out.strip().splitlines()[-1])["weights_bytes"] / 1e6
            for fmt in args.formats.split(","):
                ext = ".mindir" if fmt == "mindir" else ".onnx"
                cs, ms_ = [], []
                cs_note = ms_note = ""
                for _ in range(args.runs):
                    target = work / ("cs_" + name + ext)
                    code, wall, rss, _ = run_measured(
                        [args.bin, "export", str(model), *select, "--input", shape_s + ":" + dtype,
                         "--format", fmt, "--checkpoint", str(ckpt), "-o", str(target)],
                        work, work / "cs.log")
                    log = (work / "cs.log").read_text()
                    if code != 0:
                        located = [ln for ln in log.splitlines() if "[export-" in ln]
                        lines = located or [ln for ln in log.splitlines() if "error" in ln]
                        why = lines[0] if lines else log[-200:]
                        cs_note = "refused (%d problems): %s" % (len(located), why[why.find("error:"):][:140])
                        break
                    size = sum(size_of(p) for p in outputs(work, "cs_" + name))
                    cs.append((wall, rss, size))
                    for p in outputs(work, "cs_" + name):
                        shutil.rmtree(p) if p.is_dir() else p.unlink()
                for _ in range([args.runs, 0][args.skip_mindspore]):
                    stem = work / ("ms_" + name)
                    code, wall, rss, out = run_measured(
                        [args.python, "-c", MS_CHILD, "export", str(model), cell, shape_s, dtype,
                         str(ckpt), str(stem), fmt.upper()], work, work / "ms.log")
                    if code != 0:
                        lines = [ln for ln in (work / "ms.log").read_text().splitlines()
                                 if "Error" in ln]
                        ms_note = "fails: " + (lines[-1][:160] if lines else "exit %d" % code)
                        break
                    info = json.loads(out.strip().splitlines()[-1])
                    size = sum(size_of(p) for p in outputs(work, "ms_" + name))
                    ms_.append((info["export_s"], rss, rss - info["rss_before_mb"], size, wall))
                    for p in outputs(work, "ms_" + name):
                        shutil.rmtree(p) if p.is_dir() else p.unlink()
                rows.append((name, fmt, weights_mb, cs, cs_note, ms_, ms_note))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def med(xs, i):
        return statistics.median(x[i] for x in xs)

    print(f"export benchmark: median of {args.runs} run(s); cellscope = whole `cellscope export` "
          "process; MindSpore = the mindspore.export call (process peak RSS, and its growth "
          "during the call)")
    print("| model | format | weights MB | cellscope s | cellscope peak RSS MB | file MB | "
          "ms.export s | MindSpore peak RSS MB (growth in export) | MindSpore file MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, fmt, wmb, cs, cs_note, ms_, ms_note in rows:
        c = (f"{med(cs, 0):.2f} | {med(cs, 1):.0f} | {med(cs, 2) / 1e6:.1f}" if cs
             else f"{cs_note} | - | -")
        m = (f"{med(ms_, 0):.2f} | {med(ms_, 1):.0f} ({med(ms_, 2):+.0f}) | {med(ms_, 3) / 1e6:.1f}"
             if ms_ else (f"{ms_note} | - | -" if ms_note else "not run | - | -"))
        print(f"| {name} | {fmt} | {wmb:.1f} | {c} | {m} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
