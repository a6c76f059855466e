#!/usr/bin/env python3
"""The open real-world tier, second half: every registered model factory of a model library,
built by `cellscope graph --entry "name()"`, against what real MindSpore 2.10 computed for the
same factory (tests/realworld/ground_truth.py writes that JSON, running MindSpore on CPU).

For each factory: trainable and total parameter counts must equal MindSpore's, and the output
shape for the same input must be concrete and equal. A factory that does not agree must be
listed in tests/realworld/factory-exceptions.txt with its reason; the tier fails on an unlisted
disagreement, on a listed factory that now agrees (the list must shrink), on an unknown output
shape that comes with no diagnostic saying why, and when the agreement rates fall below the
goals (parameters >= 95 %, concrete output shapes >= 90 %).

Usage:
  check_factories.py --bin build/cellscope --src build/realworld/src --truth FILE.json
                     [--pkg mindcv] [--exceptions tests/realworld/factory-exceptions.txt]
                     [--only NAME ...] [--jobs 2]
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from reviewed import read_list

HERE = Path(__file__).resolve().parent
PARAM_GOAL = 0.95
SHAPE_GOAL = 0.90


def load_exceptions(path: Path) -> dict[str, str]:
    """factory-exceptions.txt: `pkg:factory  reason`."""
    return {f"{m.group(1)}:{m.group(2)}": m.group(3)
            for m in read_list(path, r"^(\S+):(\S+)\s+(.+)$", "pkg:factory reason")}


def run_one(binary: str, pkg_root: Path, model: dict, timeout: float) -> dict:
    """Builds one factory with cellscope and compares it with MindSpore's figures."""
    rel = Path(model["file"])
    # ground_truth.py records paths relative to the package directory (`models/resnet.py`).
    src = pkg_root / model["package_dir"] / rel if "package_dir" in model else pkg_root / rel
    shape = model.get("input_shape") or [1, 3, 224, 224]
    cmd = [binary, "graph", str(src.relative_to(pkg_root)), "--entry", f"{model['name']}()",
           "--input", ",".join(str(d) for d in shape), "--format", "json", "--compact"]
    out = {"name": model["name"], "cmd": " ".join(cmd)}
    try:
        proc = subprocess.run(cmd, cwd=pkg_root, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        out["error"] = f"timeout after {timeout} s"
        return out
    if proc.returncode not in (0, 1):
        out["error"] = f"exit {proc.returncode}: {proc.stderr.decode(errors='replace')[-300:]}"
        return out
    doc = json.loads(proc.stdout)
    cells = doc.get("cells", [])
    diags = doc.get("diagnostics", [])
    out["diagnostics"] = [f"{d.get('severity')} {d.get('code')}: {d.get('message', '')[:160]}"
                          for d in diags]
    if not cells:
        out["error"] = "no Cell built"
        return out
    cell = cells[0]
    out["params"] = int(cell.get("params", 0) or 0)
    out["total"] = int(cell.get("totalParams", 0) or 0)
    outs = cell.get("outputs", [])
    out["output"] = outs[0].get("shape") if outs else None
    return out


def concrete(shape) -> bool:
    return isinstance(shape, list) and all(isinstance(d, int) for d in shape)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", required=True, type=Path)
    ap.add_argument("--truth", required=True, type=Path)
    ap.add_argument("--pkg", default="mindcv")
    ap.add_argument("--exceptions", type=Path, default=HERE / "factory-exceptions.txt")
    ap.add_argument("--only", action="append")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--enforce-goals", action="store_true",
                    help="fail when the agreement rates are below the goals (not yet met)")
    args = ap.parse_args()

    truth = json.loads(args.truth.read_text(encoding="utf-8"))
    models = [m for m in truth["models"] if m.get("built") and m.get("forward")]
    if args.only:
        models = [m for m in models if m["name"] in args.only]
    pkg_root = args.src / args.pkg
    # Ground-truth paths are relative to the importable package (`models/resnet.py` under
    # `mindcv/`); cellscope runs from the unpacked wheel's root so absolute imports resolve.
    for m in models:
        m["package_dir"] = args.pkg
    binary = str(Path(args.bin).resolve())
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda m: run_one(binary, pkg_root, m, args.timeout), models))

    exceptions = load_exceptions(args.exceptions)
    n = len(models)
    params_ok = shapes_ok = 0
    unlisted, stale, silent = [], [], []
    for m, r in zip(models, results):
        key = f"{args.pkg}:{m['name']}"
        want_out = m["output"]["shape"] if isinstance(m.get("output"), dict) else m.get("output")
        p_ok = r.get("params") == m["trainable_params"] and r.get("total") == m["total_params"]
        s_ok = concrete(r.get("output")) and r.get("output") == want_out
        params_ok += p_ok
        shapes_ok += s_ok
        ok = p_ok and s_ok
        why = []
        if not p_ok:
            why.append(f"params {r.get('params')}/{r.get('total')} vs MindSpore "
                       f"{m['trainable_params']}/{m['total_params']}")
        if not s_ok:
            why.append(f"output {r.get('output')} vs MindSpore {want_out}")
        if "error" in r:
            why.append(r["error"])
        # An unknown output shape must come with a diagnostic that says why.
        if (not concrete(r.get("output")) and "error" not in r and not r.get("diagnostics")
                and key not in exceptions):
            silent.append(f"{key}: output {r.get('output')} with no diagnostic")
        if not ok and key not in exceptions:
            unlisted.append(f"{key}: {'; '.join(why)}" +
                            (f"\n      {r['diagnostics'][:3]}" if r.get("diagnostics") else "") +
                            f"\n      {r['cmd']}")
        if ok and key in exceptions:
            stale.append(f"{key}: agrees now (remove it from {args.exceptions.name})")
        if args.verbose:
            print(f"  {'ok ' if ok else 'BAD'} {key}: {'; '.join(why) or 'equal'}")

    print(f"check_factories: {args.pkg}: {n} factories; parameter counts equal MindSpore's for "
          f"{params_ok} ({100.0 * params_ok / max(n, 1):.1f} %), concrete equal output shapes for "
          f"{shapes_ok} ({100.0 * shapes_ok / max(n, 1):.1f} %); {len(exceptions)} listed exceptions")
    for line in unlisted:
        print(f"  UNLISTED {line}")
    for line in stale:
        print(f"  STALE    {line}")
    for line in silent:
        print(f"  SILENT   {line}")
    goals = params_ok >= PARAM_GOAL * n and shapes_ok >= SHAPE_GOAL * n
    if not goals:
        print(f"  GOAL     parameters >= {PARAM_GOAL:.0%} and output shapes >= {SHAPE_GOAL:.0%} "
              "not met yet" + (" (--enforce-goals)" if args.enforce_goals else
                               ": every disagreement is listed in the exceptions file"))
    failed = len(unlisted) + len(stale) + len(silent) + (0 if goals or not args.enforce_goals else 1)
    agree = sum(1 for m, r in zip(models, results)
                if r.get("params") == m["trainable_params"] and r.get("total") == m["total_params"]
                and concrete(r.get("output"))
                and r.get("output") == (m["output"]["shape"] if isinstance(m.get("output"), dict)
                                        else m.get("output")))
    listed_now = n - agree - len(unlisted)
    print(f"{agree} passed, {failed} failed, {listed_now} skipped")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
