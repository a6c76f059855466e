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
    ``x`` float32 ones of shape ``(1, *input_size)``, and records the output
    shape(s) and dtype(s).

The input size is, in order of preference (recorded as ``input_size_source``):

  default_cfg   ``input_size`` of the factory's default_cfg (mindcv's own record
                of the resolution the model is meant for);
  patch_embed   else the image size the network's patch embedding was built for
                (``net.patch_embed.image_size`` / ``img_size``, or the same on
                ``net``): such models only accept that size, and some lack the
                cfg entry (swinv2_*: built for 256, no cfg input_size);
  fallback      else (3, 224, 224).

Forward execution (``--execution``):

  simulated (default)  ``net(x)`` runs with MindSpore's dry-run switch set (env
                       MS_SIMULATION_LEVEL=1, the value that
                       ``mindspore.utils.dryrun.set_simulation()`` uses): the
                       normal PyNative path - Python ``construct`` code, operator
                       dispatch, per-operator shape inference - but most kernels
                       are not launched, so output shapes and dtypes are those of
                       a real run while output values are meaningless.  The
                       switch is set only around ``net(x)``: building runs for
                       real, since constructors compute hyper-parameters from
                       tensor values (e.g. stochastic-depth rates).
  real                 Kernels are executed.  On a 2-core CPU the forward passes
                       of all factories take ~35 min instead of ~4 min: MindSpore
                       2.10's oneDNN convolutions on plain NCHW layouts fall back
                       to oneDNN's reference kernel (~1 s for one 3x3 64->64
                       conv at 56x56).  Use it to re-validate the simulated shapes.

Simulated shapes could differ from real ones only for operators whose output
shape depends on tensor *values* (nonzero, masked_select, unique, ...) or for
``construct`` code that branches on fetched values; to check, run once with
``--execution real`` and compare the ``output`` of every factory in the two files
(done for mindcv 0.3.0 / MindSpore 2.10.0: identical for all 275 factories).

Each factory is measured in a fresh interpreter (this script re-run with
``--measure-one``): a simulated forward can leave state behind that changes what
a later factory's constructor computes from tensor values (seen: after
convit_small's simulated forward, pvt_v2_b2's ``[float(x) for x in
ops.linspace(...)]`` gave a Dropout rate of 1.0 and its build failed).  A child
that dies (signal, out of memory) is recorded as an error of stage ``process``.
``--in-process`` measures everything in one interpreter, faster and only
trustworthy with ``--no-forward`` or ``--execution real``.

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
import contextlib
import datetime
import gc
import inspect
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

# Input when neither default_cfg nor a patch embedding gives one.
FALLBACK_INPUT_SIZE = (3, 224, 224)
# Bound on the length of a recorded exception message.
MAX_MESSAGE_CHARS = 400
# MindSpore's dry-run switch and the level used (mindspore.utils.dryrun uses "1").
SIMULATION_ENV = "MS_SIMULATION_LEVEL"
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
        # mkstemp creates the file 0600; give it the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
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


def patch_embed_image_size(net):
    """(H, W) a network's patch embedding was built for, or None.

    Looks at ``image_size``/``img_size`` on ``net.patch_embed`` and then on
    ``net`` itself, accepting an int or a pair of ints.
    """
    for holder in (getattr(net, "patch_embed", None), net):
        if holder is None:
            continue
        for attr in ("image_size", "img_size"):
            value = getattr(holder, attr, None)
            if isinstance(value, int) and not isinstance(value, bool):
                return (value, value)
            if (isinstance(value, (tuple, list)) and len(value) == 2
                    and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
                return tuple(value)
    return None


@contextlib.contextmanager
def simulated_kernels(enabled):
    """Set MindSpore's dry-run switch for the duration of the block (if enabled).

    MindSpore reads the variable when it launches an operator, so kernels run
    again after the block; but state made during it can outlive it (see the
    module docstring), hence one interpreter per factory by default.
    """
    if not enabled:
        yield
        return
    os.environ[SIMULATION_ENV] = SIMULATION_LEVEL
    try:
        yield
    finally:
        del os.environ[SIMULATION_ENV]


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


def empty_record(name):
    """The record of a factory before anything about it is known."""
    return {
        "name": name,
        "file": None,
        "def_line": None,
        "signature": None,
        "built": False,
        "trainable_params": None,
        "total_params": None,
        "training": None,
        "input_shape": None,
        "input_size_source": None,
        "forward": None,  # None: not attempted (--no-forward, or the build failed)
        "output": None,
        "output_shapes": None,
        "build_seconds": None,
        "forward_seconds": None,
        "error": None,
    }


def measure_factory(name, registry, package_root, def_lines, forward, simulate):
    """Build one factory (and unless told otherwise run it); return its JSON record."""
    import mindspore as ms

    fn = registry.model_entrypoint(name)
    source_path = inspect.getsourcefile(fn)
    cfg_input_size = registry.get_pretrained_cfg_value(name, "input_size")

    record = empty_record(name)
    record.update({
        "file": os.path.relpath(source_path, package_root).replace(os.sep, "/"),
        "def_line": def_lines.def_line(fn, source_path),
        "signature": str(inspect.signature(fn)),
    })

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

        embed_size = patch_embed_image_size(net)
        if cfg_input_size:
            input_size, source = tuple(cfg_input_size), "default_cfg"
        elif embed_size:
            input_size, source = (FALLBACK_INPUT_SIZE[0],) + embed_size, "patch_embed"
        else:
            input_size, source = FALLBACK_INPUT_SIZE, "fallback"
        record["input_shape"] = [1] + list(input_size)
        record["input_size_source"] = source

        if not forward:
            return record

        x = ms.ops.ones((1,) + input_size, ms.float32)
        start = time.perf_counter()
        try:
            with simulated_kernels(simulate):
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
                        help="run net(x) with kernels skipped (MindSpore dry-run; default) "
                             "or executed")
    parser.add_argument("--in-process", action="store_true",
                        help="measure every factory in this interpreter instead of one fresh "
                             "interpreter each (faster; a simulated forward can change later "
                             "builds)")
    parser.add_argument("--measure-one", metavar="NAME", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def child_command(args, name, record_path):
    """The command line that measures `name` alone in a fresh interpreter."""
    command = [sys.executable, os.path.abspath(__file__), "--out", record_path,
               "--measure-one", name, "--execution", args.execution]
    if args.no_forward:
        command.append("--no-forward")
    return command


def measure_in_child(args, name, workdir):
    """Run one factory's measurement in a fresh interpreter; return its record.

    The child writes the record (atomically) to a file; a child that exits
    without one (killed, out of memory, crashed in C++) becomes an error record.
    """
    record_path = os.path.join(workdir, name + ".json")
    completed = subprocess.run(child_command(args, name, record_path), check=False)
    if completed.returncode == 0 and os.path.exists(record_path):
        with open(record_path, encoding="utf-8") as handle:
            return json.load(handle)
    record = empty_record(name)
    reason = ("signal %d" % -completed.returncode if completed.returncode < 0
              else "exit code %d" % completed.returncode)
    record["error"] = {"stage": "process", "type": "ChildProcessError",
                       "message": "the interpreter measuring it ended with " + reason}
    return record


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

    # Before importing MindSpore: builds must run for real whatever the caller's
    # environment says (the dry-run switch is set around net(x) only), and the
    # C++ log is limited to errors unless the caller chose a level.
    os.environ.pop(SIMULATION_ENV, None)
    os.environ.setdefault("GLOG_v", "3")

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
    simulate = args.execution == "simulated"
    if args.measure_one:
        record = measure_factory(args.measure_one, registry, package_root, DefLineFinder(),
                                 not args.no_forward, simulate)
        write_json_atomically(args.out, record)
        return 0

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
            "forward_env": {SIMULATION_ENV: SIMULATION_LEVEL} if simulate else {},
            "input": "float32 ones, batch 1; size from default_cfg['input_size'], else the "
                     "patch embedding's image size (3 channels), else (%d, %d, %d)"
                     % FALLBACK_INPUT_SIZE,
            "only": sorted(set(args.only)) or None,
            "isolation": "one interpreter for all factories" if args.in_process
                         else "one fresh interpreter per factory",
        },
        "summary": None,
        "total_seconds": None,
        "models": [],
    }

    def_lines = DefLineFinder()
    run_start = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="ground_truth.")
    for index, name in enumerate(names, 1):
        if args.in_process:
            record = measure_factory(name, registry, package_root, def_lines,
                                     not args.no_forward, simulate)
        else:
            record = measure_in_child(args, name, workdir)
        result["models"].append(record)
        status = "ok" if record["error"] is None else record["error"]["stage"] + " error"
        print("[%3d/%d] %-30s %-13s params=%s out=%s build=%ss fwd=%ss" % (
            index, len(names), name, status, record["total_params"], record["output_shapes"],
            record["build_seconds"], record["forward_seconds"]), file=sys.stderr, flush=True)
        # Checkpoint after every factory: a crash or ^C keeps what was measured.
        result["summary"] = summarise(result["models"])
        result["total_seconds"] = round(time.perf_counter() - run_start, 1)
        write_json_atomically(args.out, result)

    shutil.rmtree(workdir, ignore_errors=True)
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
