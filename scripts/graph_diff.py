#!/usr/bin/env python3
"""Compares `cellscope graph --format json` of two binaries over the test corpus: a refactoring
that must not change what Cellscope computes shows 0 differing documents.

Models: every model of tests/corpus/manifest.json (its cell and inputs) and the runtime kernel
models of tests/runtime/models; with --mindcv SRC also every mindcv factory of
tests/realworld/mindcv-ground-truth.json (SRC: the unpacked mindcv wheel, build/realworld/src/mindcv).
Documents are compared as JSON values, ignoring pass timings (`ms`). --allow-added KEY accepts
KEY appearing where the old binary had none (a new field); --allow-new-attrs accepts node
attributes the old binary did not record (the values of attributes both record must agree).

Usage:
  python3 scripts/graph_diff.py OLD_BIN NEW_BIN [--layer semantic --layer hardware]
                                [--flags "--target ascend910b --mode train"] [--allow-added category]
                                [--allow-new-attrs] [--mindcv build/realworld/src/mindcv]
Exit status 0 when no document differs.
"""
import argparse
import ast
import concurrent.futures
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
def runtime_models():
    """(file, input shapes) of every case of the torch tier (tests/runtime/check_torch.py's
    CASES, read as data: that file imports torch)."""
    tree = ast.parse(open(os.path.join(ROOT, "tests/runtime/check_torch.py")).read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "CASES":
            return [(case[1], case[2]) for case in ast.literal_eval(node.value)]
    raise SystemExit("tests/runtime/check_torch.py has no CASES list")


def cases(mindcv):
    manifest = json.load(open(os.path.join(ROOT, "tests/corpus/manifest.json")))
    for m in manifest["models"]:
        ins = [",".join(map(str, i["shape"])) + ":" + i["dtype"] for i in m["inputs"]]
        entry = ["--entry", m["cell"]] if "(" in m["cell"] else ["--cell", m["cell"]]
        yield "tests/corpus/" + m["file"], entry + sum((["--input", i] for i in ins), [])
    for path, ins in runtime_models():
        yield path, sum((["--input", i] for i in ins), [])
    if mindcv:
        if not os.path.isdir(os.path.join(mindcv, "mindcv")):
            raise SystemExit("--mindcv: %s has no mindcv package (give the directory holding it)"
                             % mindcv)
        truth = json.load(open(os.path.join(ROOT, "tests/realworld/mindcv-ground-truth.json")))
        for m in truth["models"]:
            if m.get("input_shape"):
                yield (os.path.join(mindcv, "mindcv", m["file"]),
                       ["--root", mindcv, "--entry", m["name"] + "()", "--input",
                        ",".join(map(str, m["input_shape"]))])


def run(binary, path, args, layer, flags):
    cmd = [binary, "graph", path, "--format", "json", "--layer", layer] + args + flags
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    return json.loads(p.stdout) if p.stdout.strip() else {"stderr": p.stderr.strip()}


def differences(old, new, opts, path="$"):
    """Paths where `new` differs from `old` beyond what the options allow."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in set(old) | set(new):
            if k == "ms":
                continue
            if k not in new:
                out.append("%s.%s removed" % (path, k))
            elif k not in old:
                allowed = k in opts.allow_added or (opts.allow_new_attrs and path.endswith(".attrs"))
                if not allowed:
                    out.append("%s.%s added" % (path, k))
            else:
                out += differences(old[k], new[k], opts, path + "." + k)
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return ["%s: %d items, now %d" % (path, len(old), len(new))]
        out = []
        for i, (a, b) in enumerate(zip(old, new)):
            out += differences(a, b, opts, "%s[%d]" % (path, i))
        return out
    return [] if old == new else ["%s: %r, now %r" % (path, old, new)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--layer", action="append", help="semantic, optimized, hardware (repeatable)")
    ap.add_argument("--flags", default="", help="more `cellscope graph` flags, one string")
    ap.add_argument("--allow-added", action="append", default=[], metavar="KEY")
    ap.add_argument("--allow-new-attrs", action="store_true")
    ap.add_argument("--mindcv", metavar="SRC")
    opts = ap.parse_args()
    layers = opts.layer or ["semantic", "optimized", "hardware"]
    flags = opts.flags.split()
    jobs = [(path, args, layer) for path, args in cases(opts.mindcv) for layer in layers]

    def one(job):
        path, args, layer = job
        old, new = run(opts.old, path, args, layer, flags), run(opts.new, path, args, layer, flags)
        # A binary that printed no graph compared nothing: that is a failure, not "no difference".
        err = old.get("stderr") or new.get("stderr") or ""
        if ("stderr" in old or "stderr" in new) and not err:
            err = "no output"
        return path, layer, differences(old, new, opts), err

    bad = failed = 0
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for path, layer, d, err in pool.map(one, jobs):
            if err:
                failed += 1
                print("FAILED %s (%s): %s" % (path, layer, err[:200]))
            elif d:
                bad += 1
                print("DIFF %s (%s): %s" % (path, layer, "; ".join(d[:3])))
    print("%d documents (%s%s), %d differ, %d without a graph" % (
        len(jobs), ", ".join(layers), (" " + opts.flags) if flags else "", bad, failed))
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
