"""Compare the Cellscope analyser with MindSpore itself.

For every model in tests/corpus/manifest.json:
  * MindSpore (live, PyNative CPU) must agree with the numbers recorded in the manifest;
  * `cellscope graph <file> --cell <cell> --format json` must report the same trainable
    parameter count and the same output shapes/dtypes as MindSpore;
  * `cellscope check <file> --format json` must report no error on the (correct) model.
For every buggy file:
  * MindSpore must raise exactly when the manifest says so, and must raise whenever an
    error-level diagnostic is expected;
  * `cellscope check <file> --format json` must report every expected diagnostic
    (code, severity, 0-based start line == manifest line - 1, message substrings).

The analyser binary is $CELLSCOPE_BIN, default <repo>/build/cellscope. If it does not
exist the analyser tests are skipped, unless CELLSCOPE_REQUIRE_BIN=1 (then they fail).

Run from the repository root with the MindSpore venv:  tests/mindspore/run.sh
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ground_truth as gt  # noqa: E402

REPO_ROOT = gt.REPO_ROOT
MANIFEST = gt.load_manifest()
MODELS = MANIFEST["models"]
BUGGY = MANIFEST["buggy"]

SEVERITY_NAMES = {1: "error", 2: "warning", 3: "information", 4: "hint"}
ANALYSER_TIMEOUT = int(os.environ.get("CELLSCOPE_TIMEOUT", "300"))


def _id(entry: Dict[str, Any]) -> str:
    return Path(entry["file"]).stem


def _corpus_rel(entry: Dict[str, Any]) -> str:
    return str((gt.CORPUS_DIR / entry["file"]).relative_to(REPO_ROOT))


# --------------------------------------------------------------------------- analyser

@pytest.fixture(scope="session")
def cellscope_bin() -> Path:
    raw = os.environ.get("CELLSCOPE_BIN", "build/cellscope")
    path = Path(raw)
    if not path.is_absolute():
        path = REPO_ROOT / path
    if not (path.is_file() and os.access(path, os.X_OK)):
        msg = "analyser binary not found at %s (set CELLSCOPE_BIN)" % path
        if os.environ.get("CELLSCOPE_REQUIRE_BIN") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return path


def run_cellscope(binary: Path, args: List[str]) -> Dict[str, Any]:
    cmd = [str(binary)] + args
    proc = subprocess.run(cmd, cwd=str(REPO_ROOT), capture_output=True, text=True,
                          timeout=ANALYSER_TIMEOUT)
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        pytest.fail("`%s` did not print JSON (exit %d): %s\n--- stdout ---\n%s\n--- stderr ---\n%s"
                    % (" ".join(cmd), proc.returncode, exc, proc.stdout[-4000:], proc.stderr[-4000:]))
    data["_returncode"] = proc.returncode
    data["_stderr"] = proc.stderr
    return data


def severity_name(sev: Any) -> str:
    if isinstance(sev, int):
        return SEVERITY_NAMES.get(sev, str(sev))
    return str(sev).lower()


def format_diagnostics(diags: List[Dict[str, Any]]) -> str:
    lines = []
    for d in diags:
        start = d.get("range", {}).get("start", {})
        lines.append("  %s:%s %s [%s] %s" % (start.get("line"), start.get("character"),
                                              severity_name(d.get("severity")), d.get("code"),
                                              d.get("message")))
    return "\n".join(lines) or "  (none)"


def find_cell(graph: Dict[str, Any], entry: Dict[str, Any], truth: Dict[str, Any]) -> Dict[str, Any]:
    cells = graph.get("cells", [])
    for wanted in (entry["cell"], truth["root_class"]):
        for cell in cells:
            if cell.get("name") == wanted:
                return cell
    pytest.fail("no cell named %r (or %r) in analyser output; cells: %r"
                % (entry["cell"], truth["root_class"], [c.get("name") for c in cells]))


# --------------------------------------------------------------------------- MindSpore side

@pytest.mark.parametrize("entry", MODELS, ids=_id)
def test_manifest_model_matches_mindspore(entry):
    truth = gt.model_truth(entry)
    assert entry["trainable_params"] == truth["trainable_params"]
    assert entry["total_params"] == truth["total_params"]
    assert entry["outputs"] == truth["outputs"]
    assert entry.get("root_class") == truth["root_class"]


@pytest.mark.parametrize("entry", BUGGY, ids=_id)
def test_buggy_file_behaviour_in_mindspore(entry):
    truth = gt.buggy_truth(entry)
    assert truth["raised"] == entry["expect_raise"], \
        "MindSpore raised=%r (%s), manifest says expect_raise=%r" % (
            truth["raised"], truth["mindspore_error"], entry["expect_raise"])
    if gt.expects_error(entry):
        assert truth["raised"], "an error diagnostic is expected but MindSpore accepts %s" % entry["file"]
    if truth["raised"]:
        assert truth["mindspore_error"] == entry.get("mindspore_error")


def test_manifest_mindspore_version():
    import mindspore as ms
    assert MANIFEST["mindspore_version"] == ms.__version__


# --------------------------------------------------------------------------- analyser vs MindSpore

@pytest.mark.parametrize("entry", MODELS, ids=_id)
def test_graph_matches_mindspore(entry, cellscope_bin):
    truth = gt.model_truth(entry)
    graph = run_cellscope(cellscope_bin, ["graph", _corpus_rel(entry), "--cell", entry["cell"],
                                          "--format", "json"])
    assert graph["_returncode"] == 0, "cellscope graph exited %d\n%s" % (graph["_returncode"],
                                                                         graph["_stderr"][-4000:])
    cell = find_cell(graph, entry, truth)
    assert cell.get("params") == truth["trainable_params"], \
        "trainable params: analyser %r, MindSpore %d" % (cell.get("params"), truth["trainable_params"])
    outputs = cell.get("outputs", [])
    got = [{"shape": list(o.get("shape", [])), "dtype": str(o.get("dtype", "")).lower()} for o in outputs]
    assert got == truth["outputs"], "outputs: analyser %r, MindSpore %r" % (got, truth["outputs"])


@pytest.mark.parametrize("entry", MODELS, ids=_id)
def test_check_clean_model_has_no_errors(entry, cellscope_bin):
    result = run_cellscope(cellscope_bin, ["check", _corpus_rel(entry), "--format", "json"])
    diags = result.get("diagnostics", [])
    errors = [d for d in diags if severity_name(d.get("severity")) == "error"]
    assert not errors, "errors reported on a model MindSpore runs fine:\n" + format_diagnostics(errors)


@pytest.mark.parametrize("entry", BUGGY, ids=_id)
def test_check_reports_expected_diagnostics(entry, cellscope_bin):
    result = run_cellscope(cellscope_bin, ["check", _corpus_rel(entry), "--format", "json"])
    diags = result.get("diagnostics", [])
    missing = []
    for exp in entry["expect"]:
        def matches(d):
            start = d.get("range", {}).get("start", {})
            return (d.get("code") == exp["code"]
                    and severity_name(d.get("severity")) == exp["severity"]
                    and start.get("line") == exp["line"] - 1
                    and all(s in d.get("message", "") for s in exp.get("message_contains", [])))
        if not any(matches(d) for d in diags):
            missing.append("line %d (0-based %d) %s [%s] containing %r" % (
                exp["line"], exp["line"] - 1, exp["severity"], exp["code"], exp.get("message_contains", [])))
    assert not missing, "%s: missing diagnostics:\n  %s\nreported:\n%s" % (
        entry["file"], "\n  ".join(missing), format_diagnostics(diags))
