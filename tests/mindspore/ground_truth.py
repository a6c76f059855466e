#!/usr/bin/env python3
"""MindSpore ground truth for the Cellscope test corpus.

Every number in tests/corpus/manifest.json (parameter counts, output shapes and
dtypes, MindSpore's own error for each buggy file) is produced by this script by
actually building and running the cells with MindSpore (PyNative mode, CPU).

Usage (run with the MindSpore venv's python):
    python tests/mindspore/ground_truth.py            # check manifest against MindSpore
    python tests/mindspore/ground_truth.py --write    # regenerate the numbers in manifest.json
    python tests/mindspore/ground_truth.py --only lenet5 --only mnist_article_bug

Corpus files are imported with importlib under a private module name, so their
``if __name__ == "__main__":`` blocks never run.
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import sys
import logging
import re
import time
import traceback
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS_DIR = REPO_ROOT / "tests" / "corpus"
MANIFEST_PATH = CORPUS_DIR / "manifest.json"

import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402

_CONTEXT_SET = False


def setup_mindspore() -> None:
    """PyNative on CPU, deterministic. Also guards against the NumPy 2 ABI problem."""
    global _CONTEXT_SET
    if _CONTEXT_SET:
        return
    if int(np.__version__.split(".")[0]) >= 2:
        # MindSpore 2.10.0's wheel says numpy>=1.25.0, so pip picks NumPy 2.x, but the
        # extension is built against NumPy 1.x: the first primitive then fails with
        # "SystemError: ... returned a result with an exception set". That would make
        # every buggy file "raise" for the wrong reason, so refuse to run.
        raise RuntimeError(
            "numpy %s is installed; MindSpore %s needs numpy<2 (see tests/mindspore/requirements.txt)"
            % (np.__version__, ms.__version__))
    ms.set_context(mode=ms.PYNATIVE_MODE)
    try:
        ms.set_device("CPU")
    except (AttributeError, TypeError, ValueError):
        ms.set_context(device_target="CPU")
    ms.set_seed(0)
    np.random.seed(0)
    _CONTEXT_SET = True


def load_manifest(path: Path = MANIFEST_PATH) -> Dict[str, Any]:
    with open(path, "r", encoding="utf-8") as f:
        return json.load(f)


def load_module(rel_file: str):
    """Import a corpus file without executing its __main__ block."""
    path = (CORPUS_DIR / rel_file).resolve()
    mod_name = "cellscope_corpus_" + rel_file.replace("/", "_").replace(".py", "")
    spec = importlib.util.spec_from_file_location(mod_name, str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(mod_name, None)
        raise
    return module


def build_cell(module, cell: str):
    """`cell` is either a class name (built with its defaults) or a factory call such as "resnet50()"."""
    if "(" in cell:
        return eval(cell, vars(module))  # noqa: S307 - expression comes from our own manifest
    return getattr(module, cell)()


_NP_DTYPES = {"float32": np.float32, "float16": np.float16, "float64": np.float64,
              "int32": np.int32, "int64": np.int64, "bool": np.bool_, "uint8": np.uint8}


def make_inputs(inputs: List[Dict[str, Any]]):
    tensors = []
    for spec in inputs:
        dtype = spec.get("dtype", "float32")
        arr = np.zeros(tuple(spec["shape"]), dtype=_NP_DTYPES[dtype])
        tensors.append(ms.Tensor(arr))
    return tensors


def dtype_name(t) -> str:
    """MindSpore dtype -> lowercase name: mindspore.float32 -> "float32"."""
    return str(t.dtype).lower().replace("mindspore.", "")


def flatten_outputs(out) -> List[Dict[str, Any]]:
    if isinstance(out, (tuple, list)):
        result = []
        for o in out:
            result.extend(flatten_outputs(o))
        return result
    if isinstance(out, ms.Tensor):
        return [{"shape": [int(d) for d in out.shape], "dtype": dtype_name(out)}]
    raise TypeError("unexpected output type %r" % type(out))


def count_params(net) -> Dict[str, int]:
    trainable = sum(int(p.size) for p in net.trainable_params())
    total = sum(int(p.size) for p in net.get_parameters())
    return {"trainable_params": trainable, "total_params": total}


@functools.lru_cache(maxsize=None)
def _model_truth_cached(rel_file: str, cell: str, inputs_json: str) -> str:
    setup_mindspore()
    module = load_module(rel_file)
    net = build_cell(module, cell)
    net.set_train(False)
    result: Dict[str, Any] = {"root_class": type(net).__name__}
    result.update(count_params(net))
    out = net(*make_inputs(json.loads(inputs_json)))
    result["outputs"] = flatten_outputs(out)
    return json.dumps(result)


def model_truth(entry: Dict[str, Any]) -> Dict[str, Any]:
    """Build + run one manifest model entry. Returns root_class, trainable_params, total_params, outputs."""
    return json.loads(_model_truth_cached(entry["file"], entry["cell"],
                                          json.dumps(entry["inputs"], sort_keys=True)))


class _LogCapture(logging.Handler):
    """Collects MindSpore's Python-side WARNING records (e.g. deprecation notices)."""

    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.messages: List[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _mindspore_logger():
    try:
        from mindspore import log as ms_log
        return ms_log._get_logger()  # pylint: disable=protected-access
    except Exception:  # noqa: BLE001
        return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0].strip() if text else ""
    # Drop installation-specific paths such as "(/opt/venv/.../mindspore/ops/__init__.py)".
    line = re.sub(r"\s*\((/|[A-Za-z]:\\)[^)]*\)", "", line)
    return "%s: %s" % (type(exc).__name__, line) if line else type(exc).__name__


@functools.lru_cache(maxsize=None)
def _buggy_truth_cached(rel_file: str, cell: str, inputs_json: str) -> str:
    setup_mindspore()
    result: Dict[str, Any] = {"raised": False, "mindspore_error": None, "stage": None, "warnings": []}
    stage = "import"
    capture = _LogCapture()
    logger = _mindspore_logger()
    if logger is not None:
        logger.addHandler(capture)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            module = load_module(rel_file)
            stage = "build"
            net = build_cell(module, cell)
            net.set_train(False)
            stage = "run"
            out = net(*make_inputs(json.loads(inputs_json)))
            result["output"] = None if out is None else flatten_outputs(out)
        except Exception as exc:  # noqa: BLE001 - any MindSpore/Python failure counts
            if isinstance(exc, SystemError) and "exception set" in str(exc):
                # The NumPy-ABI artefact, not a real rejection of the model.
                raise RuntimeError("MindSpore failed for an environmental reason: %s" % exc) from exc
            result["raised"] = True
            result["mindspore_error"] = _first_line(exc)
            result["stage"] = stage
        msgs = [str(w.message) for w in caught] + capture.messages
        result["warnings"] = sorted({m.strip().splitlines()[0] for m in msgs if m.strip()})
    if logger is not None:
        logger.removeHandler(capture)
    return json.dumps(result)


def buggy_truth(entry: Dict[str, Any]) -> Dict[str, Any]:
    """Build + run one buggy entry. Returns raised, mindspore_error, stage (import/build/run)."""
    return json.loads(_buggy_truth_cached(entry["file"], entry["cell"],
                                          json.dumps(entry.get("inputs", []), sort_keys=True)))


def expects_error(entry: Dict[str, Any]) -> bool:
    return any(e.get("severity") == "error" for e in entry.get("expect", []))


# --------------------------------------------------------------------------- CLI

def _selected(entry, only: Optional[List[str]]) -> bool:
    if not only:
        return True
    stem = Path(entry["file"]).stem
    return stem in only or entry["file"] in only


def run(write: bool, only: Optional[List[str]]) -> int:
    setup_mindspore()
    manifest = load_manifest()
    problems: List[str] = []
    if manifest.get("mindspore_version") != ms.__version__:
        if write:
            manifest["mindspore_version"] = ms.__version__
        else:
            problems.append("manifest mindspore_version %s != installed %s"
                            % (manifest.get("mindspore_version"), ms.__version__))

    print("MindSpore %s, numpy %s" % (ms.__version__, np.__version__))
    print("%-22s %-16s %12s %12s  %s" % ("model", "root", "trainable", "total", "outputs"))
    for entry in manifest["models"]:
        if not _selected(entry, only):
            continue
        t0 = time.time()
        try:
            truth = model_truth(entry)
        except Exception:  # noqa: BLE001
            problems.append("%s: MindSpore failed:\n%s" % (entry["file"], traceback.format_exc()))
            continue
        outs = ", ".join("%s %s" % (tuple(o["shape"]), o["dtype"]) for o in truth["outputs"])
        print("%-22s %-16s %12d %12d  %s  (%.1fs)" % (Path(entry["file"]).stem, truth["root_class"],
                                                     truth["trainable_params"], truth["total_params"],
                                                     outs, time.time() - t0))
        for key in ("root_class", "trainable_params", "total_params", "outputs"):
            if write:
                entry[key] = truth[key]
            elif entry.get(key) != truth[key]:
                problems.append("%s: %s is %r in manifest, MindSpore says %r"
                                % (entry["file"], key, entry.get(key), truth[key]))

    print()
    print("%-26s %-6s %s" % ("buggy file", "raise", "MindSpore"))
    for entry in manifest["buggy"]:
        if not _selected(entry, only):
            continue
        truth = buggy_truth(entry)
        shown = truth["mindspore_error"] or ("; ".join(truth["warnings"]) or "(no error)")
        print("%-26s %-6s %s" % (Path(entry["file"]).stem, truth["raised"], shown[:150]))
        if write:
            entry["expect_raise"] = truth["raised"]
            entry["mindspore_error"] = truth["mindspore_error"]
            if truth["warnings"]:
                entry["mindspore_warnings"] = truth["warnings"]
            else:
                entry.pop("mindspore_warnings", None)
        else:
            if entry.get("expect_raise") != truth["raised"]:
                problems.append("%s: expect_raise is %r but MindSpore raised=%r (%s)"
                                % (entry["file"], entry.get("expect_raise"), truth["raised"],
                                   truth["mindspore_error"]))
            if truth["raised"] and entry.get("mindspore_error") != truth["mindspore_error"]:
                problems.append("%s: mindspore_error changed: %r -> %r"
                                % (entry["file"], entry.get("mindspore_error"), truth["mindspore_error"]))
        if expects_error(entry) and not truth["raised"]:
            problems.append("%s: expects an error diagnostic but MindSpore does not raise" % entry["file"])

    if write:
        with open(MANIFEST_PATH, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
        print("\nwrote %s" % MANIFEST_PATH.relative_to(REPO_ROOT))
    if problems:
        print("\nPROBLEMS:")
        for p in problems:
            print(" - " + p)
        return 1
    print("\nOK: manifest agrees with MindSpore %s" % ms.__version__)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="regenerate the numbers in manifest.json")
    ap.add_argument("--only", action="append", help="restrict to a corpus file stem (repeatable)")
    args = ap.parse_args(argv)
    return run(args.write, args.only)


if __name__ == "__main__":
    sys.exit(main())
