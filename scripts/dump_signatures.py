#!/usr/bin/env python3
"""Dumps and compares the real MindSpore signatures of every API in Cellscope's registry.

Sub-commands:

  dump   Run with a Python that has MindSpore installed. For every registry entry name, records
         whether the API exists, and the inspect.signature of the constructor (classes) and of
         construct/__call__ (classes) or the function/method itself: parameter names, kinds and
         default reprs. Writes JSON to stdout.
  diff   Any Python. Compares dumps of several MindSpore versions and prints every difference
         between consecutive versions (API added/removed, parameter added/removed/renamed, kind
         or default changed).
  check  Any Python. Compares the registry (with its version ranges) against each dump and
         prints every place where the registry disagrees with that MindSpore version.
  probe  Run with MindSpore installed: evaluates the calls in PROBES (keyword names, varargs,
         behaviour that signatures do not show) and records the result or the exception.
  probe-table  Any Python. Tabulates probe outputs of several versions ('*': version-dependent).

The registry's names come from `--registry registry.json`, written by scripts/dump_registry.cpp;
without it, names are grepped from graphcore/src/registry. The full procedure (one virtual
environment per MindSpore release) is in docs/mindspore-versions.md.
"""
import argparse
import glob
import inspect
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- registry names ----------------------------------------------------------------------------
def registry_entries(path):
    if path:
        with open(path) as f:
            return json.load(f)
    names = set()
    for cpp in glob.glob(os.path.join(ROOT, "graphcore/src/registry/*.cpp")):
        with open(cpp) as f:
            names.update(re.findall(r'"((?:nn|ops|Tensor)\.[A-Za-z_][A-Za-z_0-9]*)"', f.read()))
    return [{"name": n} for n in sorted(names)]


# ---- dump --------------------------------------------------------------------------------------
def default_src(value, mindspore):
    if value is inspect.Parameter.empty:
        return None
    if isinstance(value, mindspore.dtype.Type):
        return "mindspore." + str(value).lower()
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str, tuple, list, bool, type(None))):
        return repr(value)
    return "<" + type(value).__name__ + ">"


def doc_signatures(fn):
    """Signature lines of a C++-bound (pyboost) function's docstring: `max(dim, keepdim=False) -> ...`."""
    leaf = getattr(fn, "__name__", "")
    out = []
    for line in (getattr(fn, "__doc__", None) or "").splitlines():
        line = line.strip()
        if re.match(r"^(Tensor\.)?" + re.escape(leaf) + r"\(.*\)", line):
            out.append(re.sub(r"^Tensor\.", "", line))
    return out


def signature(fn, mindspore, drop_self):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as err:
        return {"error": str(err), "doc": doc_signatures(fn)}
    params = []
    for i, p in enumerate(sig.parameters.values()):
        if drop_self and i == 0 and p.name in ("self", "cls"):
            continue
        params.append({"name": p.name, "kind": p.kind.name, "default": default_src(p.default, mindspore)})
    return {"params": params}


def resolve(name, mindspore):
    ns, leaf = name.split(".", 1)
    mod = {"nn": mindspore.nn, "ops": mindspore.ops, "Tensor": mindspore.Tensor}[ns]
    return getattr(mod, leaf, None)


def dump(args):
    import mindspore  # noqa: PLC0415 (only this sub-command needs MindSpore)

    out = {"version": mindspore.__version__, "apis": {}}
    for entry in registry_entries(args.registry):
        name = entry["name"]
        if name in out["apis"]:
            continue
        obj = resolve(name, mindspore)
        rec = {"exists": obj is not None}
        if obj is not None:
            if inspect.isclass(obj):
                rec["class"] = True
                rec["init"] = signature(obj.__init__, mindspore, True)
                if issubclass(obj, mindspore.nn.Cell):
                    rec["call"] = signature(obj.construct, mindspore, True)
                else:
                    rec["call"] = signature(obj.__call__, mindspore, True)
            else:
                rec["call"] = signature(obj, mindspore, name.startswith("Tensor."))
        out["apis"][name] = rec
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


# ---- diff --------------------------------------------------------------------------------------
def vkey(v):
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def load_dumps(paths):
    dumps = []
    for p in paths:
        with open(p) as f:
            dumps.append(json.load(f))
    dumps.sort(key=lambda d: vkey(d["version"]))
    return dumps


def diff_params(a, b):
    """Differences between two signature records ({"params": [...]} or {"error": ...})."""
    if "error" in a or "error" in b:
        if ("error" in a) != ("error" in b):
            return [f"signature {'unavailable' if 'error' in b else 'available'}"]
        da, db = a.get("doc", []), b.get("doc", [])
        if da != db:
            return [f"documented signature {da} -> {db}"]
        return []
    pa = {p["name"]: p for p in a["params"]}
    pb = {p["name"]: p for p in b["params"]}
    out = []
    removed = [n for n in pa if n not in pb]
    added = [n for n in pb if n not in pa]
    for n in removed:
        out.append(f"parameter `{n}` removed")
    for n in added:
        out.append(f"parameter `{n}` added (default {pb[n]['default']}, {pb[n]['kind']})")
    for n in pa:
        if n in pb:
            if pa[n]["kind"] != pb[n]["kind"]:
                out.append(f"parameter `{n}` kind {pa[n]['kind']} -> {pb[n]['kind']}")
            if pa[n]["default"] != pb[n]["default"]:
                out.append(f"parameter `{n}` default {pa[n]['default']} -> {pb[n]['default']}")
    order_a = [n for n in pa if n in pb]
    order_b = [n for n in pb if n in pa]
    if order_a != order_b:
        out.append(f"parameter order {order_a} -> {order_b}")
    return out


def diff(args):
    dumps = load_dumps(args.dumps)
    names = sorted(set().union(*(d["apis"].keys() for d in dumps)))
    found = 0
    for prev, cur in zip(dumps, dumps[1:]):
        for name in names:
            a = prev["apis"].get(name, {"exists": False})
            b = cur["apis"].get(name, {"exists": False})
            lines = []
            if a["exists"] != b["exists"]:
                lines.append("added" if b["exists"] else "removed")
            elif a["exists"]:
                for part in ("init", "call"):
                    if part in a and part in b:
                        lines += [f"{part}: {d}" for d in diff_params(a[part], b[part])]
            for line in lines:
                found += 1
                print(f"{prev['version']} -> {cur['version']}  {name}: {line}")
    print(f"{found} difference(s)", file=sys.stderr)


# ---- check -------------------------------------------------------------------------------------
def contains(rng, version):
    return vkey(rng["since"]) <= vkey(version) < vkey(rng["until"])


def norm_default(d):
    if d is None:
        return None
    return {"True": "True", "False": "False"}.get(d, d.replace('"', "'"))


def check(args):
    entries = registry_entries(args.registry)
    dumps = load_dumps(args.dumps)
    problems = 0
    for d in dumps:
        ver = d["version"]
        by_name = {}
        for e in entries:
            by_name.setdefault(e["name"], []).append(e)
        for name, es in sorted(by_name.items()):
            if any(e.get("replacement") for e in es):
                continue
            live = [e for e in es if contains(e["versions"], ver)]
            rec = d["apis"].get(name, {"exists": False})
            msgs = []
            if not live and rec["exists"]:
                msgs.append("exists in MindSpore but no registry entry is valid")
            elif live and not rec["exists"]:
                msgs.append("registry entry valid but MindSpore has no such API")
            elif live:
                e = live[0]
                parts = [("init", e["init_params"]), ("call", e["call_params"])]
                if e["kind"] in ("CellClass", "PrimitiveClass"):
                    pass
                else:
                    parts = [("call", e["call_params"])]
                for part, specs in parts:
                    sig = rec.get(part)
                    if sig is None or "error" in sig:
                        continue
                    active = [p for p in specs if contains(p["versions"], ver)]
                    real = sig["params"]
                    if e["kind"] == "TensorMethod" and active and active[0]["name"] in ("self", "input", "x"):
                        # The registry spells the tensor itself as the first call parameter.
                        if not real or real[0]["name"] != "self":
                            active = active[1:]
                    if any(p["kind"] in ("VAR_POSITIONAL", "VAR_KEYWORD") for p in real) and len(real) <= 2:
                        continue  # *args/**kwargs wrappers (primitives' __call__, pyboost methods)
                    an = [p["name"] for p in active]
                    rn = [p["name"] for p in real]
                    if an != rn:
                        msgs.append(f"{part} parameters: registry {an} vs MindSpore {rn}")
                        continue
                    for p, q in zip(active, real):
                        if norm_default(p["default"]) != norm_default(q["default"]):
                            msgs.append(f"{part} `{p['name']}` default: registry {p['default']} vs MindSpore {q['default']}")
                        if p["kind"] != q["kind"]:
                            msgs.append(f"{part} `{p['name']}` kind: registry {p['kind']} vs MindSpore {q['kind']}")
            for m in msgs:
                problems += 1
                print(f"{ver}  {name}: {m}")
    print(f"{problems} disagreement(s)", file=sys.stderr)


# ---- probe -------------------------------------------------------------------------------------
# Calls whose outcome depends on the MindSpore version (behaviour the signature alone does not
# show: pyboost methods without inspectable signatures, keyword names, accepted input ranks).
PROBES = [
    ("ops.transpose(x, input_perm=...)", "ops.transpose(x23, input_perm=(1, 0))"),
    ("ops.transpose(x, dims=...)", "ops.transpose(x23, dims=(1, 0))"),
    ("ops.Transpose()(x, input_perm=...)", "ops.Transpose()(x23, input_perm=(1, 0))"),
    ("ops.Transpose()(x, dims=...)", "ops.Transpose()(x23, dims=(1, 0))"),
    ("ops.Ones()(size=...)", "ops.Ones()(size=(2, 3))"),
    ("ops.Ones()(shape=...)", "ops.Ones()(shape=(2, 3))"),
    ("ops.Ones()(s, type=...)", "ops.Ones()((2, 3), type=ms.float32)"),
    ("ops.Ones()(s, dtype=...)", "ops.Ones()((2, 3), dtype=ms.float32)"),
    ("ops.Zeros()(s, type=...)", "ops.Zeros()((2, 3), type=ms.float32)"),
    ("ops.Zeros()(s, dtype=...)", "ops.Zeros()((2, 3), dtype=ms.float32)"),
    ("ops.less(input=, other=)", "ops.less(input=x23, other=x23)"),
    ("ops.less(x, y)", "ops.less(x23, x23)"),
    ("ops.lt(input=, other=)", "ops.lt(input=x23, other=x23)"),
    ("ops.unstack(input=...)", "ops.unstack(input=x23)"),
    ("ops.unstack(input_x=...)", "ops.unstack(input_x=x23)"),
    ("Tensor.squeeze(0)", "x13.squeeze(0)"),
    ("Tensor.squeeze(0, 1)", "x113.squeeze(0, 1)"),
    ("Tensor.squeeze((0, 1))", "x113.squeeze((0, 1))"),
    ("Tensor.squeeze(axis=0)", "x13.squeeze(axis=0)"),
    ("Tensor.squeeze(dim=0)", "x13.squeeze(dim=0)"),
    ("Tensor.view(2, 3)", "x23.view(3, 2)"),
    ("Tensor.view((2, 3))", "x23.view((3, 2))"),
    ("Tensor.view(shape=...)", "x23.view(shape=(3, 2))"),
    ("Tensor.view(dtype)", "x23.view(ms.int32)"),
    ("Tensor.permute(1, 0)", "x23.permute(1, 0)"),
    ("Tensor.permute((1, 0))", "x23.permute((1, 0))"),
    ("Tensor.permute(dims=...)", "x23.permute(dims=(1, 0))"),
    ("Tensor.permute(axis=...)", "x23.permute(axis=(1, 0))"),
    ("Tensor.broadcast_to((2, 3))", "x13.broadcast_to((2, 3))"),
    ("Tensor.broadcast_to(2, 3)", "x13.broadcast_to(2, 3)"),
    ("Tensor.broadcast_to(shape=...)", "x13.broadcast_to(shape=(2, 3))"),
    ("Tensor.broadcast_to(size=...)", "x13.broadcast_to(size=(2, 3))"),
    ("Tensor.view(ms.float16)", "x23.view(ms.float16)"),
    ("Tensor.view(ms.int64)", "x23.view(ms.int64)"),
    ("Tensor.tile(2, 2)", "x23.tile(2, 2)"),
    ("Tensor.tile(dims=...)", "x23.tile(dims=(2, 2))"),
    ("Tensor.reshape(shape=...)", "x23.reshape(shape=(3, 2))"),
    ("Tensor.transpose(dim0=, dim1=)", "x23.transpose(dim0=0, dim1=1)"),
    ("Tensor.transpose(1, 0)", "x23.transpose(1, 0)"),
    ("Tensor.transpose((1, 0))", "x23.transpose((1, 0))"),
    ("ops.ones(shape=...)", "ops.ones(shape=(2, 3))"),
    ("ops.zeros(size=...)", "ops.zeros(size=(2, 3))"),
    ("nn.Flatten(start_dim=0)", "nn.Flatten(start_dim=0)(x234)"),
    ("nn.Flatten()", "nn.Flatten()(x234)"),
    ("nn.Flatten(1, 1)", "nn.Flatten(1, 1)(x234)"),
    ("nn.Dense on rank 3", "nn.Dense(4, 5)(x234)"),
    ("nn.Dense on rank 1", "nn.Dense(3, 5)(ms.Tensor(np.ones((3,), np.float32)))"),
]


def probe(_args):
    import numpy as np  # noqa: PLC0415
    import mindspore as ms  # noqa: PLC0415
    from mindspore import nn, ops  # noqa: PLC0415

    env = {"ms": ms, "nn": nn, "ops": ops, "np": np,
           "x23": ms.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)),
           "x13": ms.Tensor(np.ones((1, 3), np.float32)),
           "x113": ms.Tensor(np.ones((1, 1, 3), np.float32)),
           "x234": ms.Tensor(np.ones((2, 3, 4), np.float32))}
    out = {"version": ms.__version__, "probes": {}}
    for label, code in PROBES:
        try:
            r = eval(code, env)  # noqa: S307 (fixed probe expressions above)
            shapes = [tuple(t.shape) for t in (r if isinstance(r, (tuple, list)) else [r])]
            out["probes"][label] = "ok " + " ".join(str(s) for s in shapes)
        except Exception as err:  # noqa: BLE001 (recording the failure is the point)
            msg = str(err).strip().splitlines()[0] if str(err).strip() else ""
            out["probes"][label] = f"error {type(err).__name__}: {msg[:120]}"
    json.dump(out, sys.stdout, indent=1)
    print()


def probe_table(args):
    dumps = load_dumps(args.dumps)
    labels = list(dumps[0]["probes"])
    for label in labels:
        results = [d["probes"].get(label, "?") for d in dumps]
        mark = "  " if len({r.split(":")[0] for r in results}) == 1 else "* "
        print(mark + label)
        for d, r in zip(dumps, results):
            print(f"      {d['version']:8} {r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("dump")
    p.add_argument("--registry", help="JSON from scripts/dump_registry.cpp (default: grep the sources)")
    p.set_defaults(fn=dump)
    p = sub.add_parser("diff")
    p.add_argument("dumps", nargs="+")
    p.set_defaults(fn=diff)
    p = sub.add_parser("check")
    p.add_argument("--registry", required=True)
    p.add_argument("dumps", nargs="+")
    p.set_defaults(fn=check)
    p = sub.add_parser("probe", help="run version-dependent calls with the installed MindSpore")
    p.set_defaults(fn=probe)
    p = sub.add_parser("probe-table", help="tabulate probe outputs of several versions")
    p.add_argument("dumps", nargs="+")
    p.set_defaults(fn=probe_table)
    args = ap.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
