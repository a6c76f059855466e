"""Precision drift (issue 19) against an independent numpy recomputation on weights read back
with MindSpore's load_checkpoint: tests/training/check_drift.py. The binary is $CELLSCOPE_BIN
(default build/cellscope)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_drift_matches_independent_recomputation():
    binary = Path(os.environ.get("CELLSCOPE_BIN", "build/cellscope"))
    if not binary.is_absolute():
        binary = REPO_ROOT / binary
    assert binary.is_file(), f"cellscope not built at {binary}"
    script = REPO_ROOT / "tests" / "training" / "check_drift.py"
    r = subprocess.run([sys.executable, str(script), "--bin", str(binary)],
                       capture_output=True, text=True, timeout=1800)
    print(r.stdout)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-4000:]
