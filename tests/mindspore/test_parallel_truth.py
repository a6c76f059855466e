"""The parallel-strategy ground truth (issue 21, docs/parallel.md §7): tests/parallel/ms_parallel_truth.py
asks MindSpore 2.10 about every case under tests/parallel/cases/ (each run in a fresh MindSpore
process; the "# run: msrun" cases under msrun with two CPU workers) and compares what it says with
tests/parallel/ms_parallel_truth.json, the facts Cellscope's own parallel tests (ctest) are held to:
each case's outcome (exception type, message, line), the shard / context / pipeline_stage calls,
the per-device slices MindSpore's `_count_tensor_shape` gives, the redistribution operators, the
public API (signatures, set_auto_parallel_context keys, msrun options). It also checks that every
"# mindspore-text:" fragment a case cites is present in the installed MindSpore, so a wording
change in MindSpore, or a case citing a text MindSpore does not have, fails here.

About 100 s alone on two cores; it runs on one pytest-xdist worker beside the other tests.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "parallel" / "ms_parallel_truth.py"


def test_mindspore_agrees_with_the_recorded_parallel_truth():
    proc = subprocess.run([sys.executable, str(HARNESS), "--python", sys.executable],
                          capture_output=True, text=True, timeout=900, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, "ms_parallel_truth.py differs from MindSpore:\n" + out[-6000:]
    assert "OK: MindSpore agrees with the recorded truth" in out, out[-3000:]
