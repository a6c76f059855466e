#!/usr/bin/env python3
"""The open real-world tier, first half: `cellscope check` on every model file of MindSpore's
model libraries as published on PyPI (code nobody here wrote), compared with a reviewed list.

Every error site Cellscope reports (file, line, code) must appear in
tests/realworld/expected-errors.txt with the reason it is a real error; the tier fails on an
error site that is not listed (a false error, or a real one nobody reviewed yet) and on a listed
site that is no longer found (a lost true positive). A crash (the process dying on a signal or
with an exit code other than 0/1) or a hang (over --timeout seconds for one file) fails it too.

The sources come from the libraries' wheels, which carry them: `--src DIR` holds one folder per
package with the wheel unpacked in it (tests/realworld/run.sh does that). Nothing is copied into
this repository.

Usage:
  check_corpus.py --bin build/cellscope --src build/realworld/src [--pkg mindcv ...]
                  [--expected tests/realworld/expected-errors.txt] [--write-actual FILE]
                  [--jobs 2] [--timeout 60] [--json-out FILE]
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from reviewed import read_list

HERE = Path(__file__).resolve().parent
PACKAGES = ["mindcv", "mindocr", "mindyolo", "mindaudio", "mindformers", "mindone", "mindnlp"]
CONSTRUCT = re.compile(r"^\s*def construct\(", re.M)


def model_files(pkg_root: Path) -> list[Path]:
    """Every .py file of a package that defines a Cell's construct (a model file)."""
    out = []
    for p in sorted(pkg_root.rglob("*.py")):
        if any(part.startswith(".") or part == "__pycache__" for part in p.parts):
            continue
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if CONSTRUCT.search(text):
            out.append(p)
    return out


def check_files(binary: str, pkg_root: Path, files: list[Path], timeout: float) -> dict:
    """Runs one `cellscope check` over several files from the package root (paths relative to
    it), as a CI job checks a tree: modules they share are parsed once."""
    rel = [f.relative_to(pkg_root).as_posix() for f in files]
    cmd = [binary, "check", "--format", "json", "--no-snippets", *rel]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=pkg_root, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"files": rel, "status": "hang", "seconds": timeout}
    secs = time.monotonic() - t0
    if proc.returncode not in (0, 1):
        return {"files": rel, "status": "crash", "code": proc.returncode,
                "stderr": proc.stderr.decode(errors="replace")[-2000:], "seconds": secs}
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        return {"files": rel, "status": "crash", "code": proc.returncode,
                "stderr": f"unparseable JSON output: {e}", "seconds": secs}
    return {"files": rel, "status": "ok", "seconds": secs,
            "diagnostics": report.get("diagnostics", [])}


def check_chunk(binary: str, pkg_root: Path, files: list[Path], timeout: float) -> list[dict]:
    """A chunk at once; a chunk that crashes or hangs is re-run a file at a time, so the
    culprit is named."""
    r = check_files(binary, pkg_root, files, timeout * len(files))
    if r["status"] == "ok" or len(files) == 1:
        return [r]
    return [check_files(binary, pkg_root, [f], timeout) for f in files]


def site_key(pkg: str, diag: dict) -> tuple[str, int, str]:
    line = diag.get("range", {}).get("start", {}).get("line", 0) + 1
    path = diag.get("file", "")
    if os.path.isabs(path):
        # Outside the package (should not happen): keep it recognisable, never machine-specific.
        path = "<abs>/" + Path(path).name
    return (f"{pkg}/{path}", line, diag.get("code", ""))


def load_expected(path: Path) -> dict[tuple[str, int, str], str]:
    """expected-errors.txt: `pkg/path/to/file.py:LINE CODE  reason...`."""
    return {(m.group(1), int(m.group(2)), m.group(3)): m.group(4).strip()
            for m in read_list(path, r"^(\S+?):(\d+)\s+(\S+)\s+(.+)$",
                               "pkg/file.py:LINE CODE reason")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", required=True, type=Path)
    ap.add_argument("--pkg", action="append", choices=PACKAGES)
    ap.add_argument("--expected", type=Path, default=HERE / "expected-errors.txt")
    ap.add_argument("--write-actual", type=Path, help="write every error site found, one a line")
    ap.add_argument("--json-out", type=Path, help="write every diagnostic found, as JSON")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a file (a chunk: times its size)")
    ap.add_argument("--chunk", type=int, default=40, help="files checked by one process")
    ap.add_argument("--show", type=int, default=40, help="unexpected sites to print")
    args = ap.parse_args()

    binary = str(Path(args.bin).resolve())
    pkgs = args.pkg or PACKAGES
    jobs = []
    for pkg in pkgs:
        root = args.src / pkg
        if not root.is_dir():
            print(f"check_corpus: {root} is missing (tests/realworld/run.sh unpacks the wheels)")
            return 2
        jobs += [(pkg, root, f) for f in model_files(root)]

    chunks = []
    for pkg in pkgs:
        mine = [j for j in jobs if j[0] == pkg]
        for i in range(0, len(mine), args.chunk):
            part = mine[i:i + args.chunk]
            chunks.append((pkg, part[0][1], [f for _, _, f in part]))
    results = []
    t0 = time.monotonic()
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futs = {pool.submit(check_chunk, binary, root, files, args.timeout): pkg
                for pkg, root, files in chunks}
        for fut in cf.as_completed(futs):
            for r in fut.result():
                r["pkg"] = futs[fut]
                results.append(r)
    wall = time.monotonic() - t0
    n_files = len(jobs)

    found: dict[tuple[str, int, str], dict] = {}
    warnings = Counter()
    crashes = [r for r in results if r["status"] == "crash"]
    hangs = [r for r in results if r["status"] == "hang"]
    for r in results:
        for d in r.get("diagnostics", []):
            if d.get("severity") == "warning":
                warnings[d.get("code", "")] += 1
            if d.get("severity") != "error":
                continue
            key = site_key(r["pkg"], d)
            found.setdefault(key, {"message": d.get("message", "")})

    expected = load_expected(args.expected)
    unexpected = sorted(k for k in found if k not in expected)
    lost = sorted(k for k in expected if k not in found and k[0].split("/")[0] in pkgs)

    if args.write_actual:
        lines = [f"{k[0]}:{k[1]} {k[2]}  {found[k]['message']}" for k in sorted(found)]
        write_atomic(args.write_actual, "\n".join(lines) + "\n")
    if args.json_out:
        write_atomic(args.json_out, json.dumps(results, indent=1))

    per_pkg = defaultdict(lambda: [0, 0])
    for pkg, _, _ in jobs:
        per_pkg[pkg][0] += 1
    for k in found:
        per_pkg[k[0].split("/")[0]][1] += 1
    busy = sum(r["seconds"] for r in results)
    print(f"check_corpus: {n_files} model files in {wall:.1f} s wall, {busy:.1f} s in "
          f"{len(results)} cellscope processes ({1000 * busy / max(n_files, 1):.0f} ms a file)")
    for pkg in pkgs:
        files, sites = per_pkg[pkg]
        print(f"  {pkg:12s} {files:4d} files, {sites:3d} error sites")
    codes = Counter(k[2] for k in found)
    print("  error sites by code: " + ", ".join(f"{c} {n}" for c, n in codes.most_common()))
    print("  warnings by code: " + ", ".join(f"{c} {n}" for c, n in warnings.most_common()))
    listed = len(found) - len(unexpected)
    print(f"  {listed} error sites listed, {len(unexpected)} unlisted, "
          f"{len(lost)} listed but no longer found, {len(crashes)} crashes, {len(hangs)} hangs")
    for k in unexpected[: args.show]:
        print(f"  UNLISTED {k[0]}:{k[1]} {k[2]}  {found[k]['message'][:200]}")
    if len(unexpected) > args.show:
        print(f"  ... {len(unexpected) - args.show} more unlisted")
    for k in lost:
        print(f"  LOST     {k[0]}:{k[1]} {k[2]}  ({expected[k]})")
    for r in crashes:
        print(f"  CRASH    {r['pkg']}/{r['files'][0]} exit {r['code']}: {r['stderr'][-300:]}")
    for r in hangs:
        print(f"  HANG     {r['pkg']}/{r['files'][0]} (over {r['seconds']} s)")
    ok = not unexpected and not lost and not crashes and not hangs
    print(f"{len(found) - len(unexpected)} passed, {len(unexpected) + len(lost) + len(crashes) + len(hangs)} failed")
    return 0 if ok else 1


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
