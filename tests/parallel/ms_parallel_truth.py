#!/usr/bin/env python3
"""Ground truth for Cellscope's parallel-strategy checks, asked of real MindSpore 2.10 (CPU).

For every case script under tests/parallel/cases/ (a tiny nn.Cell with a strategy, valid or wrong in
one way) this harness runs the script in a fresh MindSpore process and records what MindSpore itself
says and computes:

* outcome: does the script get through, and if not, the exception type, MindSpore's exact message and
  the case line it was raised from (plus the C++ location MindSpore prints);
* every Primitive.shard / set_auto_parallel_context / Cell.pipeline_stage call with its line;
* the global input shapes of every sharded primitive (the net run stand-alone in PyNative mode);
* per-device slice shapes for every input whose strategy MindSpore's checks would accept, computed
  by MindSpore's own slicing code (mindspore.parallel._tensor._count_tensor_shape);
* for cases with a "# redistribute: a.i -> b.j" header, the operators MindSpore's redistribution
  engine (the C++ TensorTransform behind mindspore.parallel._tensor) inserts between two layouts;
* for cases with a "# env: K=V ..." header (the dry-run variables), the run with those variables set
  (CELLSCOPE_PROBE_GROUP_SIZE=N makes the probe's get_group_size() answer N, so Cell.shard and
  mindspore.shard make the Python checks they make in an N-device job);
* for "# run: msrun" cases, the run under `msrun --worker_num=2 --local_worker_num=2` (CPU workers),
  each rank's result line or error, and the communication primitives in the compiled graph (IR dump
  of the "validate" pass).

It also records the public API (signatures, set_auto_parallel_context keys, msrun options) and checks
that each "# mindspore-text:" fragment a case cites is present in the installed MindSpore (the C++
frontend library or the Python package), so a wording change in MindSpore fails this harness.

Usage (MindSpore 2.10 CPU venv, default ~/.cache/cellscope/msvenv/bin/python):
  python ms_parallel_truth.py            # run, compare with ms_parallel_truth.json, exit 1 on difference
  python ms_parallel_truth.py --record   # run and (re)write ms_parallel_truth.json
  python ms_parallel_truth.py --case matmul_valid   # only some cases (compare only those)
"""
import argparse
import contextlib
import glob
import inspect
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
TRUTH = os.path.join(HERE, "ms_parallel_truth.json")
DEFAULT_PY = os.path.expanduser("~/.cache/cellscope/msvenv/bin/python")
PROBE_MARK = "CELLSCOPE_PARALLEL_PROBE "
COMM_PRIMS = ("AllReduce", "AllGather", "ReduceScatter", "AlltoAll", "AllToAll", "AlltoAllV", "Send",
              "Receive", "Broadcast", "NeighborExchange", "CollectiveScatter", "CollectiveGather")


def parse_header(path):
    """Read the '# key: value' header of a case script and the line of its '# <- diagnostic' marker."""
    meta = {"texts": [], "redistribute": [], "run": "probe"}
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    last = None
    for line in lines:
        if not line.startswith("#"):
            break
        m = re.match(r"#\s*([a-z-]+):\s?(.*)$", line)
        if m:
            key, val = m.group(1), m.group(2).rstrip("\n")
            if key == "mindspore-text":
                meta["texts"].append(val)
            elif key == "redistribute":
                meta["redistribute"].append(val.strip())
            elif key == "cellscope-parallel-case":
                meta["id"] = val.strip()
            else:
                meta[key] = val.strip()
            last = key
        elif last in ("rule", "cite") and line.startswith("#  "):
            meta[last] += " " + line.lstrip("# ").strip()
    meta["diagnostic_line"] = next((i + 1 for i, l in enumerate(lines) if "# <- diagnostic" in l), None)
    return meta


# ----------------------------------------------------------------------------------------------
# Probe: runs inside the MindSpore venv, one fresh process per case.
# ----------------------------------------------------------------------------------------------
def probe(case_path):
    import numpy as np  # noqa: F401  (the venv has it; MindSpore needs it)
    import mindspore as ms
    from mindspore import nn
    from mindspore.ops import Primitive
    from mindspore.parallel import _tensor as ms_tensor

    case_path = os.path.abspath(case_path)
    rec = {"shard_calls": [], "context_calls": [], "stage_sets": []}

    def case_line():
        for fr in reversed(traceback.extract_stack()):
            if os.path.abspath(fr.filename) == case_path:
                return fr.lineno
        return None

    def plain(v):
        if isinstance(v, (tuple, list)):
            return [plain(x) for x in v]
        if hasattr(v, "to_dict"):
            d = v.to_dict()
            return {k: plain(d[k]) for k in ("device_matrix", "tensor_map", "alias_name") if k in d}
        if isinstance(v, (int, float, str, bool)) or v is None:
            return v
        return repr(v)

    orig_shard = Primitive.shard
    prims = {}

    def shard(self, in_strategy=None, out_strategy=None):
        entry = {"prim": self.name, "in_strategy": plain(in_strategy), "out_strategy": plain(out_strategy),
                 "line": case_line()}
        rec["shard_calls"].append(entry)
        res = orig_shard(self, in_strategy, out_strategy)
        prims[id(self)] = (self, entry)
        return res

    Primitive.shard = shard

    orig_ctx = ms.set_auto_parallel_context

    def set_ctx(**kwargs):
        rec["context_calls"].append({"kwargs": {k: plain(v) for k, v in kwargs.items()}, "line": case_line()})
        return orig_ctx(**kwargs)

    ms.set_auto_parallel_context = set_ctx
    ms.context.set_auto_parallel_context = set_ctx

    prop = nn.Cell.__dict__["pipeline_stage"]

    def stage_setter(self, value):
        rec["stage_sets"].append({"cell": type(self).__name__, "value": plain(value), "line": case_line()})
        prop.fset(self, value)

    nn.Cell.pipeline_stage = property(prop.fget, stage_setter, prop.fdel, prop.__doc__)

    # "# env: CELLSCOPE_PROBE_GROUP_SIZE=8": the job's world size as msrun would give it. Cell.shard
    # and mindspore.shard return before their Python checks when get_group_size() is 1 (a lone CPU
    # process); with this they run them, so the case measures MindSpore's own exception and line.
    group_size = os.environ.get("CELLSCOPE_PROBE_GROUP_SIZE")
    if group_size:
        import mindspore.communication.management as comm_management
        comm_management.get_group_size = lambda group=None: int(group_size)

    glb = {"__name__": "__main__", "__file__": case_path}
    with open(case_path, encoding="utf-8") as f:
        code = compile(f.read(), case_path, "exec")
    outcome = {"status": "ok"}
    try:
        exec(code, glb)  # pylint: disable=exec-used
    except Exception as e:  # noqa: BLE001  (we record whatever MindSpore raises)
        msg = str(e)
        tb = traceback.extract_tb(e.__traceback__)
        line = next((fr.lineno for fr in reversed(tb) if os.path.abspath(fr.filename) == case_path), None)
        cpp = re.findall(r"^(mindspore/\S+\.cc:\d+ \S+)$", msg, re.M)
        outcome = {"status": "error", "type": type(e).__name__, "message": msg.split("\n")[0].strip(),
                   "line": line, "cpp_location": cpp[0] if cpp else None}
        loads = re.findall(r"^(Load dynamic library: .*)$", msg, re.M)
        if loads:
            outcome["device_load_errors"] = loads
    rec["outcome"] = outcome
    device_num = ms.get_auto_parallel_context("device_num")
    rec["device_num"] = device_num
    rec["pipeline_stages"] = ms.get_auto_parallel_context("pipeline_stages")
    rec["parallel_mode"] = ms.get_auto_parallel_context("parallel_mode")

    # Stand-alone run (PyNative, no parallel) to learn each sharded primitive's global input shapes.
    shapes = {}
    net, inputs = glb.get("net"), glb.get("inputs")
    if net is not None and inputs is not None:
        # Generated primitive classes define their own __call__: wrap each sharded primitive's class.
        originals = {cls: cls.__call__ for cls in {type(p) for p, _ in prims.values()}}

        def make_call(orig_call):
            def call(self, *args):
                if id(self) in prims and id(self) not in shapes:
                    shapes[id(self)] = [list(a.shape) if hasattr(a, "shape") else None for a in args]
                return orig_call(self, *args)
            return call

        for cls, orig_call in originals.items():
            cls.__call__ = make_call(orig_call)
        try:
            ms.reset_auto_parallel_context()
            ms.set_context(mode=ms.PYNATIVE_MODE)
            with contextlib.redirect_stdout(io.StringIO()):
                net(*inputs)
        except Exception as e:  # noqa: BLE001
            rec["standalone_error"] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
        finally:
            for cls, orig_call in originals.items():
                cls.__call__ = orig_call
    attr_of = {}
    if net is not None:
        for name, cell in net.cells_and_names():
            for k, v in vars(cell).items():
                if isinstance(v, Primitive) and id(v) in prims:
                    attr_of[id(v)] = (name + "." if name else "") + k
    for pid, (prim, entry) in prims.items():
        entry["attr"] = attr_of.get(pid)
        entry["input_shapes"] = shapes.get(pid)

    # Per-device slices, from MindSpore's own slicing code, for strategies MindSpore would accept.
    for _, entry in prims.values():
        strat, in_shapes = entry["in_strategy"], entry["input_shapes"]
        if not strat or not in_shapes or not all(isinstance(s, list) and all(isinstance(v, int) for v in s)
                                                 for s in strat):
            continue
        per_input = []
        for s, shp in zip(strat, in_shapes):
            if shp is None or len(s) != len(shp) or any(v <= 0 or d % v for v, d in zip(s, shp)):
                per_input = None
                break
            prod = int(np.prod(s))
            if device_num % prod:
                per_input = None
                break
            repeat = device_num // prod
            # OperatorInfo::SetRepeatedCalcDevMatrix puts the repeat count at the right of the device
            # matrix; ResetTensorMapIfRepeatedCalc shifts the tensor map by one.
            dev = list(s) + ([repeat] if repeat > 1 else [])
            tmap = [len(dev) - 1 - i for i in range(len(s))]
            by_shape = {}
            for r in range(device_num):
                sl = ms_tensor._count_tensor_shape(dev, tmap, shp, r)
                by_shape.setdefault(json.dumps([int(v) for v in sl]), []).append(r)
            per_input.append({"global": shp, "dev_matrix": dev, "tensor_map": tmap,
                              "per_device": [{"shape": json.loads(k), "ranks": v} for k, v in by_shape.items()]})
        if per_input is not None:
            entry["per_device"] = per_input

    # Redistribution between two sharded primitives, from MindSpore's TensorTransform.
    redists = []
    by_attr = {e["attr"]: e for _, e in prims.values() if e.get("attr")}
    for spec in glb.get("__cellscope_redistribute__", []) or parse_header(case_path)["redistribute"]:
        m = re.match(r"(\S+)\.(\d+)\s*->\s*(\S+)\.(\d+)$", spec)
        a, b = by_attr.get(m.group(1)), by_attr.get(m.group(3))
        ia, ib = int(m.group(2)), int(m.group(4))
        if not a or not b or not a.get("input_shapes"):
            redists.append({"spec": spec, "error": "primitives or their shapes not found"})
            continue
        shp = a["input_shapes"][ia]
        sa, sb = a["in_strategy"][ia], b["in_strategy"][ib]
        tmap = [len(shp) - 1 - i for i in range(len(shp))]
        frm, to = ms_tensor._construct_from_to_tensor_layout(shp, sa, tmap, shp, sb, tmap)
        ops_by_rank = {}
        for r in range(device_num):
            ops_r = ms_tensor._transform_tensor_by_layout(frm, to, list(range(device_num)), r)
            ops_by_rank[r] = [[o[0], list(o[1])] for o in ops_r]
        redists.append({"spec": spec, "from_layout": plain(frm), "to_layout": plain(to),
                        "operators_rank0": ops_by_rank[0],
                        "operator_kinds": sorted({o[0] for ops_r in ops_by_rank.values() for o in ops_r})})
    if redists:
        rec["redistributions"] = redists
    for e in rec["shard_calls"]:
        e.pop("prim_id", None)
    print(PROBE_MARK + json.dumps(rec))


# ----------------------------------------------------------------------------------------------
# API facts (inside the venv).
# ----------------------------------------------------------------------------------------------
def api_facts():
    import mindspore as ms
    from mindspore import nn
    from mindspore.ops import Primitive
    from mindspore.parallel import _auto_parallel_context as apc

    facts = {"mindspore_version": ms.__version__}

    def sig(f):
        return str(inspect.signature(f))

    facts["signatures"] = {
        "mindspore.set_auto_parallel_context": sig(ms.set_auto_parallel_context),
        "mindspore.ops.Primitive.shard": sig(Primitive.shard),
        "mindspore.nn.Cell.shard": sig(nn.Cell.shard),
        "mindspore.shard": sig(ms.shard),
        "mindspore.parallel.shard": sig(ms.parallel.shard),
        "mindspore.parallel.Layout": sig(ms.parallel.Layout),
        "mindspore.nn.PipelineCell": sig(nn.PipelineCell),
        "mindspore.parallel.nn.Pipeline": sig(ms.parallel.nn.Pipeline),
        "mindspore.parallel.nn.PipelineCell": sig(ms.parallel.nn.PipelineCell),
    }
    facts["mindspore.shard is mindspore.parallel.shard"] = ms.shard is ms.parallel.shard
    facts["mindspore.Layout is mindspore.parallel.Layout"] = ms.Layout is ms.parallel.Layout
    facts["Primitive.shard python source signature"] = str(inspect.signature(inspect.unwrap(Primitive.shard)))
    facts["set_auto_parallel_context keys"] = sorted(apc._set_auto_parallel_context_func_map)
    defaults = {}
    for k in ("parallel_mode", "device_num", "global_rank", "pipeline_stages", "full_batch",
              "dataset_strategy", "search_mode", "gradients_mean", "enable_parallel_optimizer"):
        defaults[k] = ms.get_auto_parallel_context(k)
    facts["get_auto_parallel_context defaults"] = defaults
    facts["Cell.pipeline_stage is a property"] = isinstance(nn.Cell.__dict__.get("pipeline_stage"), property)
    try:
        nn.Dense(2, 2).pipeline_stage  # noqa: B018
        facts["Cell.pipeline_stage unset"] = "readable"
    except AttributeError as e:
        facts["Cell.pipeline_stage unset"] = f"AttributeError: {e}"
    try:
        from mindspore.parallel.auto_parallel import AutoParallel
        facts["mindspore.parallel.auto_parallel.AutoParallel"] = sig(AutoParallel)
        facts["AutoParallel methods"] = {n: sig(getattr(AutoParallel, n)) for n in sorted(dir(AutoParallel))
                                         if not n.startswith("_") and n not in dir(nn.Cell)}
    except ImportError as e:
        facts["mindspore.parallel.auto_parallel.AutoParallel"] = f"ImportError: {e}"
    # MindSpore's own auto-parallel cost-model constants (abstract units, not GB/s).
    from mindspore.parallel import _cost_model_context as cmc
    facts["cost model context"] = {k: cmc.get_cost_model_context(k) for k in (
        "costmodel_communi_threshold", "costmodel_communi_const", "costmodel_communi_bias", "costmodel_alpha",
        "costmodel_beta", "costmodel_gamma", "device_memory_capacity")}
    facts["hasattr(mindspore.ops, 'auto_parallel')"] = hasattr(ms.ops, "auto_parallel")
    facts["hasattr(mindspore.parallel, 'auto_parallel')"] = hasattr(ms.parallel, "auto_parallel")
    print(PROBE_MARK + json.dumps(facts))


# ----------------------------------------------------------------------------------------------
# Orchestration (any python; spawns the venv python).
# ----------------------------------------------------------------------------------------------
def run_probe(py, args, env=None, timeout=600):
    p = subprocess.run([py, os.path.abspath(__file__)] + args, capture_output=True, text=True,
                       timeout=timeout, env=env, check=False)
    for line in p.stdout.splitlines():
        if line.startswith(PROBE_MARK):
            return json.loads(line[len(PROBE_MARK):])
    raise RuntimeError(f"probe {args} gave no result (exit {p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def msrun_options(py):
    msrun = os.path.join(os.path.dirname(py), "msrun")
    p = subprocess.run([msrun, "--help"], capture_output=True, text=True, check=False, timeout=120)
    usage = p.stdout.split("positional arguments:")[0]
    return sorted(set(re.findall(r"\[(--[a-z_]+)", usage)))


def run_msrun(py, case_path):
    msrun = os.path.join(os.path.dirname(py), "msrun")
    work = tempfile.mkdtemp(prefix="cellscope-msrun-")
    try:
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(py) + os.pathsep + env.get("PATH", "")  # workers run `python`
        env["MS_DEV_SAVE_GRAPHS"] = "1"
        env["MS_DEV_SAVE_GRAPHS_PATH"] = os.path.join(work, "ir")
        cmd = [msrun, "--worker_num=2", "--local_worker_num=2", f"--master_port={free_port()}",
               f"--log_dir={os.path.join(work, 'logs')}", "--join=True", os.path.abspath(case_path)]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False, cwd=work)
        res = {"command": "msrun --worker_num=2 --local_worker_num=2 --master_port=<free> --log_dir=<dir> "
                          "--join=True " + os.path.relpath(case_path, HERE),
               "exit_code": p.returncode, "ranks": {}}
        for rank in (0, 1):
            log = os.path.join(work, "logs", f"worker_{rank}.log")
            text = open(log, encoding="utf-8", errors="replace").read() if os.path.exists(log) else ""
            out = [l for l in text.splitlines() if l.startswith("rank ")]
            errs = re.findall(r"^(\w+Error: .*)$", text, re.M)
            res["ranks"][str(rank)] = {"result": out[-1] if out else None, "error": errs[-1] if errs else None}
        comm = []
        irs = sorted(glob.glob(os.path.join(work, "ir", "rank_0", "*_validate_*.ir")))
        if irs:
            with open(irs[-1], encoding="utf-8", errors="replace") as f:
                text = f.read()
            pat = r"= (%s)\((.*?)\) \{instance name: [^}]*\} primitive_attrs: \{([^}]*)\}" % "|".join(COMM_PRIMS)
            for m in re.finditer(pat, text):
                attrs = dict(re.findall(r'(\w+): ("[^"]*"|[A-Za-z0-9]+\([^)]*\)|[^,]+)', m.group(3)))
                comm.append({"primitive": m.group(1),
                             **{k: attrs[k] for k in ("group", "op", "fusion") if k in attrs}})
            res["ir_pass"] = os.path.basename(irs[-1]).rsplit("_", 1)[0]
        res["communication_ops"] = comm
        return res
    finally:
        shutil.rmtree(work, ignore_errors=True)


def text_presence(py, fragments):
    """Which cited fragments appear in the installed MindSpore (frontend library or Python sources)."""
    root = subprocess.run([py, "-c", "import mindspore,os;print(os.path.dirname(mindspore.__file__))"],
                          capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    blobs = []
    for rel in ("lib/libmindspore_frontend.so",):
        with open(os.path.join(root, rel), "rb") as f:
            blobs.append(("lib/libmindspore_frontend.so", f.read()))
    for pyf in glob.glob(os.path.join(root, "**", "*.py"), recursive=True):
        if "/_akg/" in pyf or "/_extends/" in pyf:
            continue
        with open(pyf, "rb") as f:
            blobs.append((os.path.relpath(pyf, root), f.read()))
    found = {}
    for frag in fragments:
        b = frag.encode()
        where = [name for name, blob in blobs if b in blob]
        found[frag] = where[:3]
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=os.environ.get("CELLSCOPE_MSVENV_PYTHON", DEFAULT_PY))
    ap.add_argument("--record", action="store_true", help="write ms_parallel_truth.json")
    ap.add_argument("--case", action="append", help="only this case id (repeatable)")
    ap.add_argument("--probe", help=argparse.SUPPRESS)
    ap.add_argument("--api", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.probe:
        return probe(a.probe)
    if a.api:
        return api_facts()
    if not os.path.exists(a.python):
        sys.exit(f"MindSpore venv python not found: {a.python} (create it as tests/mindspore does)")

    t0 = time.time()
    cases = sorted(glob.glob(os.path.join(CASES, "*.py")))
    result = {"cases": {}}
    if not a.case:
        result["api"] = run_probe(a.python, ["--api"])
        result["api"]["msrun options"] = msrun_options(a.python)
    fragments = []
    for path in cases:
        meta = parse_header(path)
        cid = meta.get("id") or os.path.basename(path)[:-3]
        if a.case and cid not in a.case:
            continue
        t = time.time()
        entry = {"kind": meta.get("kind"), "rule": meta.get("rule"), "cite": meta.get("cite"),
                 "diagnostic_line": meta["diagnostic_line"], "cited_texts": meta["texts"]}
        if meta["run"] == "msrun":
            entry["msrun"] = run_msrun(a.python, path)
        else:
            env = dict(os.environ)
            if meta.get("env"):
                entry["env"] = meta["env"]
                env.update(kv.split("=", 1) for kv in meta["env"].split())
            entry["probe"] = run_probe(a.python, ["--probe", path], env=env)
        fragments += meta["texts"]
        result["cases"][cid] = entry
        print(f"{cid:32s} {time.time() - t:6.1f}s  {summary(entry)}", flush=True)
    presence = text_presence(a.python, sorted(set(fragments)))
    for entry in result["cases"].values():
        said = entry.get("probe", {}).get("outcome", {}).get("message") or ""
        said += "\n" + (entry.get("probe", {}).get("standalone_error") or "")
        said += "\n".join(r["error"] or "" for r in entry.get("msrun", {}).get("ranks", {}).values())
        entry["cited_texts_found_in"] = {
            f: (["measured message"] if f in said else []) + presence[f] for f in entry["cited_texts"]}
    print(f"total {time.time() - t0:.1f}s")

    missing = [(c, f) for c, e in result["cases"].items() for f, w in e["cited_texts_found_in"].items() if not w]
    for c, f in missing:
        print(f"FAIL {c}: cited MindSpore text not found in the installed MindSpore: {f!r}")
    if a.record:
        if a.case and os.path.exists(TRUTH):
            with open(TRUTH, encoding="utf-8") as f:
                old = json.load(f)
            old["cases"].update(result["cases"])
            result = old
        with open(TRUTH + ".tmp", "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(TRUTH + ".tmp", TRUTH)
        print(f"wrote {TRUTH}")
        return 1 if missing else 0
    with open(TRUTH, encoding="utf-8") as f:
        truth = json.load(f)
    diffs = []
    if "api" in result:
        diffs += compare("api", truth.get("api"), result["api"])
    for cid, entry in result["cases"].items():
        diffs += compare(cid, truth["cases"].get(cid), entry)
    for d in diffs:
        print("DIFF", d)
    ok = not diffs and not missing
    print("OK: MindSpore agrees with the recorded truth" if ok else f"{len(diffs)} difference(s)")
    return 0 if ok else 1


def summary(entry):
    if "msrun" in entry:
        r = entry["msrun"]
        return f"msrun exit {r['exit_code']}; comm {[c['primitive'] for c in r['communication_ops']]}; " \
               f"rank0 {r['ranks']['0']['result'] or r['ranks']['0']['error']}"
    o = entry["probe"]["outcome"]
    return "ok" if o["status"] == "ok" else f"{o['type']} line {o['line']}: {o['message'][:110]}"


def compare(path, old, new):
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new)):
            out += compare(f"{path}.{k}", old.get(k), new.get(k))
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        out = []
        for i, (o, n) in enumerate(zip(old, new)):
            out += compare(f"{path}[{i}]", o, n)
        return out
    return [] if old == new else [f"{path}: recorded {old!r}, now {new!r}"]


if __name__ == "__main__":
    sys.exit(main())
