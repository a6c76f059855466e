#!/usr/bin/env python3
"""Ground truth for Cellscope's real-world tier: every model factory of mindcv.

Run under a venv holding the pins of tests/realworld/requirements.txt (MindSpore
CPU + mindcv).  For each factory registered in mindcv's model registry
(``mindcv.models.registry.list_models()``) this script

  * locates the factory: module file relative to the mindcv package root
    (e.g. ``models/resnet.py``) and the line of its ``def`` statement;
  * builds it with the defaults of its signature (called without arguments, so
    ``pretrained=False`` and ``num_classes``/``in_channels`` as declared);
  * counts parameters: trainable (``net.trainable_params()``) and total
    (``net.get_parameters()``), each the sum of ``Parameter.size``;
  * unless ``--no-forward``: calls ``net(x)`` once in PyNative mode on CPU, with
    ``x`` float32 ones of shape ``(1, *input_size)``, where ``input_size`` is
    the ``input_size`` of the factory's default_cfg if it declares one and
    ``(3, 224, 224)`` otherwise, and records the output shape(s) and dtype(s).

Forward execution (``--execution``):

  simulated (default)  MindSpore's dry-run mode (env MS_SIMULATION_LEVEL=1, the
                       value ``mindspore.utils.dryrun.set_simulation()`` uses).
                       ``net(x)`` runs the normal PyNative path - Python
                       ``construct`` code, operator dispatch and per-operator
                       shape inference - but kernels are not launched, so output
                       *shapes and dtypes* are those of a real run while output
                       *values* are meaningless.  All factories take a few minutes.
  real                 Kernels are executed.  On a 2-core CPU this takes over an
                       hour for all factories: MindSpore 2.10's oneDNN
                       convolutions on plain NCHW layouts fall back to oneDNN's
                       reference kernel (~1 s for one 3x3 64->64 conv at 56x56).
                       Use it to re-validate the simulated shapes.

Shapes in simulated mode would differ from a real run only for operators whose
output shape depends on tensor *values* (nonzero, masked_select, unique, ...) or
for Python code that branches on fetched values; to check, run once with
``--execution real`` and compare the ``output`` of every factory in the two files.

Every step is timed; an exception is recorded (stage, type, short message)
instead of aborting the run.  The JSON result is rewritten atomically (temp
file + os.replace) after every factory, so an interrupted run still leaves a
valid, partial file whose top-level ``complete`` is false.

Usage:
  python tests/realworld/ground_truth.py --out tests/realworld/mindcv-ground-truth.json
  python tests/realworld/ground_truth.py --out /tmp/gt.json --only resnet50 --only vit_b_16_224
  python tests/realworld/ground_truth.py --out /tmp/gt.json --no-forward
  python tests/realworld/ground_truth.py --out /tmp/gt-real.json --execution real
"""

import argparse
import ast
import datetime
import gc
import inspect
import json
import os
import platform
import sys
import tempfile
import time

# Default input when a factory's default_cfg declares no input_size.
FALLBACK_INPUT_SIZE = (3, 224, 224)
# Bound on the length of a recorded exception message.
MAX_MESSAGE_CHARS = 400
# Dry-run level used by --execution simulated (mindspore.utils.dryrun uses "1").
SIMULATION_LEVEL = "1"

SCHEMA_VERSION = 1


# --------------------------------------------------------------------------
# Small helpers (no MindSpore needed)
# --------------------------------------------------------------------------

def write_json_atomically(path, data):
    """Write `data` as JSON to `path` via a temp file in the same directory + os.replace."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp_path = tempfile.mkstemp(prefix=".ground_truth.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
            handle.write("\n")
        os.replace(tmp_path, path)
    except BaseException:
        if os.path.exists(tmp_path):
            os.unlink(tmp_path)
        raise


def describe_exception(stage, exc):
    """Short, JSON-friendly description of an exception raised at `stage`.

    MindSpore errors span many lines (C++ call stack, hints); they are joined
    and cut to MAX_MESSAGE_CHARS.
    """
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    message = " | ".join(lines)
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS - 3] + "..."
    return {"stage": stage, "type": type(exc).__name__, "message": message}


class DefLineFinder:
    """Maps a function object to the line of its `def` statement.

    ``fn.__code__.co_firstlineno`` is the line of the first decorator of a
    decorated function (every registered factory carries ``@register_model``),
    so the defining module is parsed and the FunctionDef whose decorator/def
    span starts on that line is looked up.  Parsed files are cached.
    """

    def __init__(self):
        self._cache = {}

    def _defs_of(self, path):
        if path not in self._cache:
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), filename=path)
            table = {}
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                    table[(node.name, first)] = node.lineno
            self._cache[path] = table
        return self._cache[path]

    def def_line(self, fn, path):
        code = fn.__code__
        return self._defs_of(path).get((code.co_name, code.co_firstlineno), code.co_firstlineno)


def flat_shapes(tree):
    """Shapes of all tensors of an output tree (see output_tree), depth-first."""
    if isinstance(tree, list):
        return [shape for item in tree for shape in flat_shapes(item)]
    if isinstance(tree, dict):
        if "shape" in tree:
            return [tree["shape"]]
        return [shape for item in tree.values() for shape in flat_shapes(item)]
    return []


# --------------------------------------------------------------------------
# Per-factory measurement (MindSpore imported by main() beforehand)
# --------------------------------------------------------------------------

def output_tree(value):
    """JSON mirror of a forward result: a tensor becomes {"shape", "dtype"},
    tuples/lists become lists, dicts stay dicts; anything else is named by type."""
    import mindspore as ms

    if isinstance(value, ms.Tensor):
        return {"shape": list(value.shape), "dtype": str(value.dtype)}
    if isinstance(value, (tuple, list)):
        return [output_tree(item) for item in value]
    if isinstance(value, dict):
        return {str(key): output_tree(item) for key, item in value.items()}
    return {"python_type": type(value).__name__}


def measure_factory(name, registry, package_root, def_lines, forward):
    """Build one factory (and unless told otherwise run it); return its JSON record."""
    import mindspore as ms

    fn = registry.model_entrypoint(name)
    source_path = inspect.getsourcefile(fn)
    cfg_input_size = registry.get_pretrained_cfg_value(name, "input_size")
    input_size = tuple(cfg_input_size) if cfg_input_size else FALLBACK_INPUT_SIZE

    record = {
        "name": name,
        "file": os.path.relpath(source_path, package_root).replace(os.sep, "/"),
        "def_line": def_lines.def_line(fn, source_path),
        "signature": str(inspect.signature(fn)),
        "built": False,
        "trainable_params": None,
        "total_params": None,
        "training": None,
        "input_shape": [1] + list(input_size),
        "input_size_source": "default_cfg" if cfg_input_size else "fallback",
        "forward": None,  # None: not attempted (--no-forward, or the build failed)
        "output": None,
        "output_shapes": None,
        "build_seconds": None,
        "forward_seconds": None,
        "error": None,
    }

    net = None
    try:
        start = time.perf_counter()
        try:
            net = fn()  # every argument at its declared default; pretrained=False
        except Exception as exc:  # noqa: BLE001 - recorded, not fatal
            record["build_seconds"] = round(time.perf_counter() - start, 3)
            record["error"] = describe_exception("build", exc)
            return record
        record["build_seconds"] = round(time.perf_counter() - start, 3)
        record["built"] = True
        record["trainable_params"] = int(sum(p.size for p in net.trainable_params()))
        record["total_params"] = int(sum(p.size for p in net.get_parameters()))
        # A fresh Cell is in inference mode (training=False) and is run as is;
        # recorded because some models' outputs depend on it (auxiliary heads).
        record["training"] = bool(net.training)

        if not forward:
            return record

        start = time.perf_counter()
        try:
            x = ms.ops.ones((1,) + input_size, ms.float32)
            tree = output_tree(net(x))
        except Exception as exc:  # noqa: BLE001 - recorded, not fatal
            record["forward_seconds"] = round(time.perf_counter() - start, 3)
            record["forward"] = False
            record["error"] = describe_exception("forward", exc)
            return record
        record["forward_seconds"] = round(time.perf_counter() - start, 3)
        record["forward"] = True
        record["output"] = tree
        record["output_shapes"] = flat_shapes(tree)
        return record
    finally:
        # Release the network before the next factory (the largest hold GBs).
        del net
        gc.collect()


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Build every mindcv model factory; record parameter counts and output shapes.")
    parser.add_argument("--out", required=True, help="JSON file to write (atomically)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="measure only this factory (repeatable)")
    parser.add_argument("--no-forward", action="store_true",
                        help="build and count parameters only; skip net(x)")
    parser.add_argument("--execution", choices=("simulated", "real"), default="simulated",
                        help="forward pass with kernels skipped (MindSpore dry-run; default) "
                             "or executed")
    return parser.parse_args(argv)


def configure_environment(execution):
    """Environment MindSpore reads; must run before `import mindspore`."""
    if execution == "simulated":
        os.environ["MS_SIMULATION_LEVEL"] = SIMULATION_LEVEL
    else:
        os.environ.pop("MS_SIMULATION_LEVEL", None)
    # MindSpore's C++ log: errors only, unless the caller chose a level.
    os.environ.setdefault("GLOG_v", "3")


def summarise(records):
    return {
        "factories": len(records),
        "built": sum(1 for r in records if r["built"]),
        "build_failed": sum(1 for r in records if not r["built"]),
        "forward_ok": sum(1 for r in records if r["forward"] is True),
        "forward_failed": sum(1 for r in records if r["forward"] is False),
        "build_seconds": round(sum(r["build_seconds"] or 0 for r in records), 1),
        "forward_seconds": round(sum(r["forward_seconds"] or 0 for r in records), 1),
    }


def main(argv=None):
    args = parse_args(argv)
    configure_environment(args.execution)

    import numpy
    import mindspore as ms
    import mindcv
    from mindcv.models import registry

    ms.set_device("CPU")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    # Synchronous operator launch.  PyNative's asynchronous pipeline only adds
    # hand-off latency on a small machine (every .shape/.dtype query waits for
    # it): 2-3x faster here, and errors surface at the operator that raised them.
    ms.runtime.launch_blocking()
    # Shapes and parameter counts do not depend on the seed; fixed for repeatability.
    ms.set_seed(0)

    package_root = os.path.dirname(os.path.abspath(mindcv.__file__))
    names = registry.list_models()
    if args.only:
        unknown = [name for name in args.only if not registry.is_model(name)]
        if unknown:
            sys.exit("ground_truth.py: unknown mindcv factory: " + ", ".join(unknown))
        names = sorted(set(args.only))

    result = {
        "schema_version": SCHEMA_VERSION,
        "generator": "tests/realworld/ground_truth.py",
        "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "complete": False,
        "versions": {
            "mindcv": mindcv.__version__,
            "mindspore": ms.__version__,
            "numpy": numpy.__version__,
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "settings": {
            "registry": "mindcv.models.registry.list_models()",
            "factory_call": "fn() - every argument at its signature default (pretrained=False)",
            "mode": "PYNATIVE_MODE",
            "device": "CPU",
            "forward": not args.no_forward,
            "execution": args.execution,
            "ms_simulation_level": os.environ.get("MS_SIMULATION_LEVEL"),
            "input": "float32 ones, batch 1, shape (1, *default_cfg['input_size']) "
                     "else (1, %d, %d, %d)" % FALLBACK_INPUT_SIZE,
            "only": sorted(set(args.only)) or None,
        },
        "summary": None,
        "total_seconds": None,
        "models": [],
    }

    def_lines = DefLineFinder()
    run_start = time.perf_counter()
    for index, name in enumerate(names, 1):
        record = measure_factory(name, registry, package_root, def_lines, not args.no_forward)
        result["models"].append(record)
        status = "ok" if record["error"] is None else record["error"]["stage"] + " error"
        print("[%3d/%d] %-30s %-13s params=%s out=%s build=%ss fwd=%ss" % (
            index, len(names), name, status, record["total_params"], record["output_shapes"],
            record["build_seconds"], record["forward_seconds"]), file=sys.stderr, flush=True)
        # Checkpoint after every factory: a crash or ^C keeps what was measured.
        result["summary"] = summarise(result["models"])
        result["total_seconds"] = round(time.perf_counter() - run_start, 1)
        write_json_atomically(args.out, result)

    result["complete"] = True
    result["summary"] = summarise(result["models"])
    result["total_seconds"] = round(time.perf_counter() - run_start, 1)
    write_json_atomically(args.out, result)

    s = result["summary"]
    print("mindcv %s, mindspore %s, %s forward: %d factories, %d built, %d forward ok, "
          "%d forward failed; build %.1fs + forward %.1fs, total %.1fs -> %s" % (
              mindcv.__version__, ms.__version__, args.execution, s["factories"], s["built"],
              s["forward_ok"], s["forward_failed"], s["build_seconds"], s["forward_seconds"],
              result["total_seconds"], args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
