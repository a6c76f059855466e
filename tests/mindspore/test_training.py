"""Training against MindSpore 2.10, step by step (issue 17): tests/training/compare_training.py for
every case, one pytest test each. The binary is $CELLSCOPE_BIN (default build/cellscope)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tests" / "training"))

import compare_training  # noqa: E402


@pytest.mark.parametrize("case", sorted(compare_training.CASES))
def test_training_matches_mindspore(case):
    binary = Path(os.environ.get("CELLSCOPE_BIN", "build/cellscope"))
    if not binary.is_absolute():
        binary = REPO_ROOT / binary
    assert binary.is_file(), f"cellscope not built at {binary}"
    script = REPO_ROOT / "tests" / "training" / "compare_training.py"
    r = subprocess.run([sys.executable, str(script), "--bin", str(binary), "--case", case],
                       capture_output=True, text=True, timeout=1800)
    print(r.stdout)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
