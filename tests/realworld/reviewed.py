"""The reviewed lists of the real-world tier (expected-errors.txt, factory-exceptions.txt): one
entry a line, `#` starts a comment, every line must match the list's pattern."""
from __future__ import annotations

import re
import sys
from pathlib import Path


def read_list(path: Path, pattern: str, want: str) -> list[re.Match]:
    """The lines of `path` matched by `pattern`; exits with a located message on a malformed
    one (`want` says what a line looks like). A missing file is an empty list."""
    out = []
    if not path.exists():
        return out
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(pattern, line)
        if not m:
            sys.exit(f"{path}:{n}: malformed line (want `{want}`): {raw}")
        out.append(m)
    return out
