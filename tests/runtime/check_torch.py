#!/usr/bin/python3
"""Checks graphcore's CPU runtime against PyTorch (Debian's python3-torch; run with /usr/bin/python3).

For each case, `cellscope-run` runs a Cell on the runtime and writes the graph (graph.json), the
parameters it initialised, the inputs, and every node's outputs as .npy files. This script then
re-executes the same graph in PyTorch with the same weights and inputs and compares:

  * per node: the torch op applied to the runtime's own input values (isolates each kernel), and
  * end to end: the whole network chained in torch from the inputs, against the runtime's outputs.

LeNet-5 and the functional-arguments model are additionally written directly in torch (independent
of the graph walk: the arguments are those of the source, not read back from the graph).

A tensor passes when max|a - b| <= atol + rtol * max|b| (per tensor; reported as max abs error
and error relative to the tensor's scale). Tolerances: fp32 per node rtol 1e-4; end to end
rtol 1e-4 (ResNet-50: 1e-3, 160+ layers of accumulation order differences; ViT-B/16 and
BERT-base 1e-3). Nodes with a Python scalar operand (attributes `scalar` / `scalar_index`) are
applied in torch with the scalar as a Python number in its recorded position and must also give
torch's dtype (its promotion of Python scalars is MindSpore's); the `scalars` case: end to end
rtol 1e-6. Constants whose elements the static evaluator computed from numpy code (the
Transformer's position table and causal mask: no `value` attribute) are checked against numpy's
own computation (rtol 1e-6) and then feed the torch chain as numpy computed them.

Usage: /usr/bin/python3 tests/runtime/check_torch.py [--bin build-rt/bench/cellscope-run]
                                                    [--work DIR] [--only NAME] [-v]
Exit status 0 when every comparison passes.
"""
import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# name, model file, input shapes, input specs, end-to-end rtol
CASES = [
    ("conv_family", "tests/runtime/models/conv_family.py", ["2,4,17,19"], [], 1e-4),
    ("pool_family", "tests/runtime/models/pool_family.py", ["2,3,11,13"], [], 1e-4),
    ("dense_norm", "tests/runtime/models/dense_norm.py", ["2,4,6,6"], [], 1e-4),
    ("activations", "tests/runtime/models/activations.py", ["4,6", "4,6"], [], 1e-4),
    ("shapes", "tests/runtime/models/shapes.py", ["3,4,5", "2,5:int32"], ["random", "random"],
     1e-4),
    # Python scalar operands on both sides, int tensors with float scalars, compare with scalars
    # (int inputs are random in [0, 10)); outputs must also have torch's dtype.
    # A function's call-time arguments reach its kernel (gelu tanh, leaky_relu alpha, softplus
    # beta/threshold), also checked against the source's arguments written in torch.
    ("functional_args", "tests/runtime/models/functional_args.py", ["5,7"], [], 1e-5),
    # Operators added by their definition alone: GroupNorm, Mish, Erf, CumSum.
    ("more_ops", "tests/runtime/models/more_ops.py", ["2,4,5,6"], [], 1e-5),
    # Reductions, selection and padding added by their definitions (std/var, logsumexp, norm,
    # max/min with indices, topk, narrow, linspace, pad in five modes, PReLU, Mod, invert).
    ("select_pad", "tests/runtime/models/select_pad.py", ["2,4,5,6"], [], 1e-5),
    # 1-D convolutions (nn.Conv1d as MindSpore's height-1 Conv2D, ops.conv1d) and adaptive
    # pools (1-D average; 2-D max with indices, shrinking and growing).
    ("conv1d_pool", "tests/runtime/models/conv1d_pool.py", ["2,4,10"], [], 1e-5),
    # Nearest resizes (plain, align_corners, interpolate), transposed convolutions (same,
    # valid, pad with dilation and groups), LpNorm with its epsilon floor.
    ("resize_transpose", "tests/runtime/models/resize_transpose.py", ["2,4,5,6"], [], 1e-5),
    # ops.interpolate in every mode, each as the operator MindSpore runs for it (nearest and
    # nearest-exact, linear, bilinear, trilinear, bicubic, area), 3-D to 5-D.
    ("interpolate", "tests/runtime/models/interpolate.py", ["2,3,7", "2,3,5,6", "1,2,3,4,5"], [],
     1e-5),
    # LSTM (2 layers, bidirectional, batch_first), GRU with an initial state, RNN relu no bias.
    ("recurrent", "tests/runtime/models/recurrent.py", ["2,7,6"], [], 1e-5),
    # nn.MultiheadAttention: self-attention, cross-attention with kdim/vdim, per-head weights.
    ("attention", "tests/runtime/models/attention.py", ["2,7,6", "2,3,5"], [], 1e-5),
    # nn.Conv3d: per-side padding, dilation and groups under 'same', the default pad mode.
    ("conv3d", "tests/runtime/models/conv3d.py", ["2,4,5,6,7"], [], 1e-5),
    # `if` on a tensor: the Merge of both branches' values picks the taken one.
    ("branches", "tests/runtime/models/branches.py", ["3,4"], [], 1e-6),
    ("scalars", "tests/runtime/models/scalars.py", ["4,6", "4,6:int32"], ["random", "random"],
     1e-6),
    ("lenet5", "tests/corpus/models/lenet5.py", ["64,1,32,32"], [], 1e-4),
    ("mobilenetv2", "tests/corpus/models/mobilenetv2.py", ["1,3,224,224"], [], 1e-3),
    ("resnet50", "tests/corpus/models/resnet50.py", ["1,3,224,224"], [], 1e-3),
    # Scalar operands inside real models: attention scales, BERT's attention mask from the ids.
    ("vit_b16", "tests/corpus/models/vit_b16.py", ["1,3,224,224"], [], 1e-3),
    ("bert_base", "tests/corpus/models/bert_base.py", ["1,16:int32"], [], 1e-3),
    # Encoder-decoder with constants computed by numpy in __init__ (sinusoid position table,
    # causal mask): checked against numpy below, then used as the torch chain's constants.
    ("transformer", "tests/corpus/models/transformer.py", ["1,16:int32", "1,16:int32"],
     ["random", "random"], 1e-3),
]


def transformer_constants(shape):
    """numpy's values of the Transformer's constants (tests/corpus/models/transformer.py: max_len
    256, d_model 512), sliced to `shape` as construct slices them; None for another shape."""
    import math
    max_len, d_model = 256, 512
    position = np.arange(max_len)[:, None].astype(np.float32)
    div_term = np.exp(np.arange(0, d_model, 2).astype(np.float32) * -(math.log(10000.0) / d_model))
    table = np.zeros((max_len, d_model), dtype=np.float32)
    table[:, 0::2] = np.sin(position * div_term)
    table[:, 1::2] = np.cos(position * div_term)
    causal = np.triu(np.ones((max_len, max_len), dtype=np.float32), k=1) * -1e9
    if len(shape) == 3 and shape[0] == 1 and shape[2] == d_model:
        return table[None, :shape[1], :]
    if len(shape) == 2 and shape[0] == shape[1]:
        return causal[:shape[0], :shape[1]]
    return None


# Constants whose elements the static evaluator computed from numpy code (no `value` attribute:
# the elements are not in graph.json): the runtime's values must match numpy's.
NUMPY_CONSTANTS = {"transformer": transformer_constants}
CONSTANT_RTOL = 1e-6

NODE_RTOL = 1e-4
# Operators whose MindSpore definition torch does not compute exactly. ResizeBicubic: MindSpore
# quantises the cubic kernel's offset to 1/1024 (~1e-3 from torch's exact kernel); the MindSpore
# tier (tests/mindspore/test_runtime_ops.py) checks it to 1e-5 against MindSpore itself.
OP_RTOL = {"ResizeBicubic": 3e-3}
ATOL = 1e-6

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "int32": torch.int32,
                "int64": torch.int64, "bool": torch.bool}


def load(path):
    return torch.from_numpy(np.load(path))


def attr(node, name, default=None):
    return node["attrs"].get(name, default)


def bicubic_reference(x, size, align):
    """MindSpore's ResizeBicubic written as two resampling matrices, y = Wh x Ww^T, with the
    exact cubic convolution kernel (MindSpore tables it in 1/1024 steps: OP_RTOL). With
    align_corners: a = -0.75, corners mapped onto corners, taps clamped to the edge (torch's
    bicubic); without: a = -0.5 on the half-pixel grid, taps outside the image dropped and the
    rest renormalised (torch has no such mode)."""
    a = -0.75 if align else -0.5

    def cubic(t):
        t = abs(t)
        if t <= 1:
            return ((a + 2) * t - (a + 3)) * t * t + 1
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a if t < 2 else 0.0

    def matrix(n, m):
        w = np.zeros((m, n))
        for o in range(m):
            src = (o * (n - 1) / (m - 1) if m > 1 else 0.0) if align else (o + 0.5) * n / m - 0.5
            base = int(np.floor(src))
            taps = [(i, cubic(src - i)) for i in range(base - 1, base + 3)]
            if not align:
                taps = [(i, v) for i, v in taps if 0 <= i < n]
                total = sum(v for _, v in taps)
                taps = [(i, v / total) for i, v in taps]
            for i, v in taps:
                w[o, min(max(i, 0), n - 1)] += v
        return torch.from_numpy(w).to(x.dtype)

    return matrix(x.shape[2], size[0]) @ x @ matrix(x.shape[3], size[1]).T


def pair(v, n=2):
    if isinstance(v, list):
        return v[-n:] if len(v) >= n else v * n
    return [v] * n


def out_shape(node, i=0):
    return node["outputs"][i]["shape"]


def window_pads(node, spatial, kernel, stride, dilation, ceil_mode=False):
    """MindSpore pad modes as (before, after) per spatial dim (independent re-derivation)."""
    mode = str(attr(node, "pad_mode", "valid")).lower()
    pads = []
    for i, size in enumerate(spatial):
        eff = (kernel[i] - 1) * dilation[i] + 1
        if mode == "same":
            out = -(-size // stride[i])
            total = max((out - 1) * stride[i] + eff - size, 0)
            pads.append((total // 2, total - total // 2))
        elif mode == "pad":
            p = attr(node, "padding", attr(node, "pad", 0))
            if isinstance(p, int):
                pads.append((p, p))
            elif len(p) == len(spatial):
                pads.append((p[i], p[i]))
            else:
                pads.append((p[2 * i], p[2 * i + 1]))
        else:
            pads.append((0, 0))
    return pads


def torch_pad(x, pads, value=0.0):
    flat = []
    for before, after in reversed(pads):
        flat += [before, after]
    return F.pad(x, flat, value=value)


def conv2d(node, x, params):
    w = params[0]
    b = params[1] if len(params) > 1 and attr(node, "has_bias", False) else None
    k = list(w.shape[2:])
    stride = pair(attr(node, "stride", 1))
    dilation = pair(attr(node, "dilation", 1))
    pads = window_pads(node, list(x.shape[2:]), k, stride, dilation)
    return F.conv2d(torch_pad(x, pads), w, b, stride=stride, dilation=dilation,
                    groups=attr(node, "group", 1))


def conv1d(node, x, w, b):
    """A 1-D convolution (nn.Conv1d's Conv2D with a (out, in, 1, k) weight, ops.conv1d's
    Conv1D) in torch, its padding worked out from MindSpore's pad modes."""
    w = w.reshape(w.shape[0], w.shape[1], w.shape[-1])
    first = lambda v: v[-1] if isinstance(v, list) else v
    k, s, d = w.shape[-1], first(attr(node, "stride", 1)), first(attr(node, "dilation", 1))
    mode = str(attr(node, "pad_mode", "valid")).lower()
    if mode == "pad":
        p = attr(node, "padding", 0)
        x = F.pad(x, tuple(p[-2:]) if isinstance(p, list) and len(p) > 1 else (first(p),) * 2)
    elif mode == "same":
        out = -(-x.shape[-1] // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - x.shape[-1], 0)
        x = F.pad(x, (total // 2, total - total // 2))
    return F.conv1d(x, w, b, stride=s, dilation=d,
                    groups=attr(node, "group", attr(node, "groups", 1)))


def pool2d(node, x, is_max):
    k = pair(attr(node, "kernel_size", 1))
    stride = pair(attr(node, "stride", 1))
    mode = str(attr(node, "pad_mode", "valid")).lower()
    ceil_mode = bool(attr(node, "ceil_mode", False))
    # nn.MaxPool2d's dilation (pad_mode 'pad' only); return_indices: torch's per-plane indices
    dilation = pair(attr(node, "dilation", 1)) if is_max else [1, 1]
    pads = window_pads(node, list(x.shape[2:]), k, stride, dilation)
    if is_max:
        if mode == "pad":
            out = F.max_pool2d(x, k, stride, padding=[p[0] for p in pads], dilation=dilation,
                               ceil_mode=ceil_mode, return_indices=len(node["outputs"]) == 2)
            return list(out) if isinstance(out, tuple) else out
        return F.max_pool2d(torch_pad(x, pads, float("-inf")), k, stride, ceil_mode=ceil_mode)
    if mode == "same":  # average over the valid elements only
        s = F.avg_pool2d(torch_pad(x, pads), k, stride, divisor_override=1)
        cnt = F.avg_pool2d(torch_pad(torch.ones_like(x), pads), k, stride, divisor_override=1)
        return s / cnt
    if mode == "pad":
        return F.avg_pool2d(x, k, stride, padding=[p[0] for p in pads], ceil_mode=ceil_mode,
                            count_include_pad=bool(attr(node, "count_include_pad", True)))
    return F.avg_pool2d(x, k, stride, ceil_mode=ceil_mode)


def reduce_axes(node, x):
    shape, out = list(x.shape), out_shape(node)
    if attr(node, "axis") is not None:
        a = attr(node, "axis")
        axes = [a] if isinstance(a, int) else list(a)
        return [ax % len(shape) for ax in axes] or list(range(len(shape))), len(out) == len(shape)
    if len(out) == len(shape):
        return [i for i in range(len(shape)) if out[i] != shape[i]], True
    for r in range(len(shape) + 1):
        for axes in itertools.combinations(range(len(shape)), r):
            if [d for i, d in enumerate(shape) if i not in axes] == out:
                return list(axes), False
    raise ValueError("cannot infer reduction axes")


def transpose_perm(node, x):
    if attr(node, "perm") is not None:
        return attr(node, "perm")
    out = out_shape(node)
    for p in itertools.permutations(range(x.dim())):
        if [x.shape[i] for i in p] == out:
            return list(p)
    raise ValueError("no permutation")


def dense_activation(y, act):
    if act in (None, "", "None"):
        return y
    return {"relu": F.relu, "relu6": F.relu6, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
            "gelu": lambda t: F.gelu(t, approximate="tanh")}[act](y)


def gelu_approx(node):
    a = attr(node, "approximate")
    if isinstance(a, str):
        return a == "tanh"
    return bool(a)


def with_scalar(node, ins):
    """The op's operands: its tensor inputs with the recorded Python scalar operand (attribute
    `scalar`) inserted at `scalar_index`, as a Python number (torch applies the same promotion
    rules to Python scalars as MindSpore: int tensor * float -> float32, int tensor + int keeps
    the tensor's dtype)."""
    ins = list(ins)
    if "scalar" in node["attrs"]:
        ins.insert(node["attrs"]["scalar_index"], node["attrs"]["scalar"])
    return ins


COMPARE = {"Equal": torch.eq, "NotEqual": torch.ne, "Less": torch.lt, "LessEqual": torch.le,
           "Greater": torch.gt, "GreaterEqual": torch.ge}


def run_op(node, ins, params):
    op = node["op"]
    x = ins[0] if ins else None
    if node["kind"] == "constant":
        return [torch.full(out_shape(node), attr(node, "value"),
                           dtype=TORCH_DTYPES[node["outputs"][0]["dtype"]])]
    if op in ("LSTM", "GRU", "RNN"):
        kw = dict(num_layers=attr(node, "num_layers", 1), bias=attr(node, "has_bias", True),
                  batch_first=attr(node, "batch_first", False),
                  bidirectional=attr(node, "bidirectional", False))
        if op == "RNN":
            kw["nonlinearity"] = attr(node, "nonlinearity", "tanh")
        m = getattr(torch.nn, op)(attr(node, "input_size"), attr(node, "hidden_size"), **kw)
        with torch.no_grad():  # MindSpore's parameter names are torch's
            for name, value in zip(node["params"], params):
                getattr(m, name.rsplit(".", 1)[-1]).copy_(value)
        state = tuple(ins[1:]) if len(ins) > 1 else None
        y, hn = m(x, (state if op == "LSTM" else state[0]) if state else None)
        return [y, *hn] if op == "LSTM" else [y, hn]
    if op == "MultiheadAttention":
        names = [n.split(".", 1)[1] for n in node["params"]]  # MindSpore's names are torch's
        e = attr(node, "embed_dim")
        m = torch.nn.MultiheadAttention(
            e, attr(node, "num_heads"), bias="in_proj_bias" in names,
            kdim=attr(node, "kdim") or e, vdim=attr(node, "vdim") or e,
            batch_first=attr(node, "batch_first", False))
        with torch.no_grad():
            for name, value in zip(names, params):
                m.get_parameter(name).copy_(value)
        per_head = len(node["outputs"]) > 1 and len(node["outputs"][1]["shape"]) == 4
        y, w = m(ins[0], ins[1], ins[2], average_attn_weights=not per_head)
        return [y, w] if len(node["outputs"]) > 1 else [y]
    if op == "Conv3D":
        w = params[0]
        b = params[1] if len(params) > 1 and attr(node, "has_bias", False) else None
        triple = lambda v: list(v[-3:]) if isinstance(v, list) and len(v) >= 3 else [
            v[0] if isinstance(v, list) else v] * 3
        stride, dilation = triple(attr(node, "stride", 1)), triple(attr(node, "dilation", 1))
        pads = window_pads(node, list(x.shape[2:]), list(w.shape[2:]), stride, dilation)
        return [F.conv3d(torch_pad(x, pads), w, b, stride=stride, dilation=dilation,
                         groups=attr(node, "group", 1))]
    if op == "Merge":  # the `if` on a one-element tensor picks a branch's value
        return [ins[1] if bool(ins[0]) else ins[2]]
    if op in ("ResizeNearestNeighborV2", "UpsampleNearest3D", "ResizeLinear1D",
              "ResizeBilinearV2", "UpsampleTrilinear3D", "ResizeBicubic"):
        # ops.interpolate: the mode it was called with, the size the node produces (or the
        # scale factor the call gave, which sets torch's source step as it sets MindSpore's).
        mode = attr(node, "mode", "nearest")
        factor = attr(node, "scale_factor")
        kw = ({"scale_factor": factor} if factor is not None and
              not attr(node, "recompute_scale_factor", False)
              else {"size": out_shape(node)[2:]})
        align = bool(attr(node, "align_corners", False))
        if op == "ResizeBicubic":
            return [bicubic_reference(x, out_shape(node)[2:], align)]
        if mode not in ("nearest", "nearest-exact"):
            kw["align_corners"] = align
        return [F.interpolate(x, mode=mode, **kw)]
    if op == "ResizeNearestNeighbor":
        size = out_shape(node)[2:]
        if not attr(node, "align_corners", False):
            return [F.interpolate(x, size=size, mode="nearest")]
        for d, m in enumerate(size):  # align_corners: round(dst * (in - 1) / (out - 1))
            n = x.shape[2 + d]
            idx = torch.tensor([int(np.floor(o * (n - 1) / (m - 1) + 0.5)) if m > 1 else 0
                                for o in range(m)])
            x = x.index_select(2 + d, idx)
        return [x]
    if op == "Conv2DTranspose":
        w = params[0]
        b = params[1] if len(params) > 1 and attr(node, "has_bias", False) else None
        stride, dilation = pair(attr(node, "stride", 1)), pair(attr(node, "dilation", 1))
        full = F.conv_transpose2d(x, w, b, stride=stride, dilation=dilation,
                                  groups=attr(node, "group", 1))
        oh, ow = out_shape(node)[2:]
        mode = str(attr(node, "pad_mode", "same")).lower()
        if mode == "pad":
            p = attr(node, "padding", 0)
            p = [p] * 4 if isinstance(p, int) else p
            top, left = p[0], p[2] if len(p) == 4 else p[-1]
        elif mode == "same":
            top, left = (full.shape[2] - oh) // 2, (full.shape[3] - ow) // 2
        else:
            top, left = 0, 0
        return [full[:, :, top:top + oh, left:left + ow]]
    if op == "LpNorm":
        axes, keep = reduce_axes(node, x)
        y = torch.linalg.vector_norm(x, attr(node, "p", 2), dim=axes, keepdim=keep)
        return [y.clamp_min(attr(node, "epsilon", 1e-12))]
    if op == "Conv2D" and x.dim() == 3:
        return [conv1d(node, x, params[0],
                       params[1] if len(params) > 1 and attr(node, "has_bias", False) else None)]
    if op == "Conv1D":
        return [conv1d(node, x, ins[1], ins[2] if len(ins) > 2 else None)]
    if op == "AdaptiveAvgPool1D":
        return [F.adaptive_avg_pool1d(x, out_shape(node)[-1])]
    if op == "AdaptiveAvgPool2D":
        return [F.adaptive_avg_pool2d(x, out_shape(node)[-2:])]
    if op == "AdaptiveAvgPool3D":
        return [F.adaptive_avg_pool3d(x, out_shape(node)[-3:])]
    if op == "AdaptiveMaxPool2D":
        values, indices = F.adaptive_max_pool2d(x, out_shape(node)[-2:], return_indices=True)
        return [values, indices] if len(node["outputs"]) == 2 else [values]
    if op == "Conv2D":
        return [conv2d(node, x, params)]
    if op == "MaxPool":
        out = pool2d(node, x, True)
        return out if isinstance(out, list) else [out]
    if op == "AvgPool":
        return [pool2d(node, x, False)]
    if op == "MatMul" and node["api"] == "nn.Dense":
        y = F.linear(x, params[0], params[1] if len(params) > 1 else None)
        return [dense_activation(y, attr(node, "activation"))]
    if op in ("MatMul", "BatchMatMul"):
        a, b = ins[0], ins[1]
        if attr(node, "transpose_a", False):
            a = a.transpose(-1, -2)
        if attr(node, "transpose_b", False):
            b = b.transpose(-1, -2)
        return [torch.matmul(a, b)]
    if op == "BatchNorm":
        named = dict(zip([p.rsplit(".", 1)[-1] for p in node["params"]], params))
        return [F.batch_norm(x, named["moving_mean"], named["moving_variance"], named["gamma"],
                             named["beta"], False, 0.0, attr(node, "eps", 1e-5))]
    if op == "LayerNorm":
        begin = attr(node, "begin_norm_axis", -1) % x.dim()
        return [F.layer_norm(x, list(x.shape[begin:]), params[0], params[1],
                             attr(node, "epsilon", 1e-7))]
    if op == "ReLU":
        return [F.relu(x)]
    if op == "ReLU6":
        return [F.relu6(x)]
    if op == "GeLU":
        return [F.gelu(x, approximate="tanh" if gelu_approx(node) else "none")]
    if op == "LeakyReLU":
        return [F.leaky_relu(x, attr(node, "alpha", 0.2))]
    if op == "Elu":
        return [F.elu(x, attr(node, "alpha", 1.0))]
    if op == "Softplus":
        return [F.softplus(x, attr(node, "beta", 1), attr(node, "threshold", 20))]
    if op == "Mish":
        return [F.mish(x)]
    if op == "Sign":
        return [torch.sign(x)]
    if op == "Round":
        return [torch.round(x)]  # halves to even, as MindSpore
    if op == "Tanhshrink":
        return [F.tanhshrink(x)]
    if op == "Softmin":
        return [F.softmin(x, dim=attr(node, "axis", -1))]
    if op == "FastGeLU":
        return [fast_gelu(x)]
    if op == "Dropout2D":
        return [x]
    if op == "Erf":
        return [torch.erf(x)]
    if op == "CumSum":
        return [torch.cumsum(x, dim=attr(node, "axis"))]
    if op == "GroupNorm":
        return [F.group_norm(x, attr(node, "num_groups"), params[0], params[1], attr(node, "eps"))]
    if op == "Sigmoid":
        return [torch.sigmoid(x)]
    if op == "Tanh":
        return [torch.tanh(x)]
    if op in ("Softmax", "LogSoftmax"):
        a = attr(node, "axis", -1)
        a = a[0] if isinstance(a, list) else a
        return [(F.softmax if op == "Softmax" else F.log_softmax)(x, dim=a)]
    if op in ("Exp", "Log", "Sqrt", "Abs", "Neg"):
        return [getattr(torch, op.lower())(x)]
    if op in ("Add", "Sub", "Mul", "Div", "RealDiv", "Maximum", "Minimum", "Pow", "FloorDiv"):
        a, b = with_scalar(node, ins)
        if op in ("Maximum", "Minimum") and not isinstance(b, torch.Tensor):
            b = torch.tensor(b, dtype=torch.result_type(a, b))
        if op == "FloorDiv":
            return [torch.div(a, b, rounding_mode="floor")]
        if op == "Pow" and not isinstance(a, torch.Tensor):
            return [torch.pow(a, b)]  # python base, tensor exponent
        fn = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div,
              "RealDiv": torch.div, "Maximum": torch.maximum, "Minimum": torch.minimum,
              "Pow": torch.pow}[op]
        if not isinstance(a, torch.Tensor):  # 1 - x, 2.5 / x: python scalar first
            return [{"Add": lambda s, t: s + t, "Sub": lambda s, t: s - t,
                     "Mul": lambda s, t: s * t, "Div": lambda s, t: s / t,
                     "RealDiv": lambda s, t: s / t}[op](a, b)]
        return [fn(a, b)]
    if op in COMPARE:
        a, b = with_scalar(node, ins)
        if not isinstance(a, torch.Tensor):
            a, b = b, a
            return [{"Less": torch.gt, "LessEqual": torch.ge, "Greater": torch.lt,
                     "GreaterEqual": torch.le}.get(op, COMPARE[op])(a, b)]
        return [COMPARE[op](a, b)]
    if op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin") and len(node["outputs"]) == 1:
        axes, keep = reduce_axes(node, x)
        if op in ("ReduceMax", "ReduceMin"):
            return [(torch.amax if op == "ReduceMax" else torch.amin)(x, dim=axes, keepdim=keep)]
        fn = torch.mean if op == "ReduceMean" else torch.sum
        return [fn(x, dim=axes, keepdim=keep) if axes else x.clone()]
    if op in ("ReduceStd", "ReduceVar"):
        axes, keep = reduce_axes(node, x)
        fn = torch.std if op == "ReduceStd" else torch.var
        return [fn(x, dim=axes, correction=attr(node, "ddof", 0), keepdim=keep)]
    if op == "LogSumExp":
        axes, keep = reduce_axes(node, x)
        return [torch.logsumexp(x, dim=axes, keepdim=keep)]
    if op == "Norm":
        axes, keep = reduce_axes(node, x)
        order = attr(node, "ord")
        order = float(order) if order in ("inf", "-inf") else order  # JSON has no infinity
        return [torch.linalg.vector_norm(x, 2 if order in (None, "fro") else order, dim=axes,
                                         keepdim=keep)]
    if op in ("ArgMaxWithValue", "ArgMinWithValue") or (
            op in ("ReduceMax", "ReduceMin") and len(node["outputs"]) == 2):
        axes, keep = reduce_axes(node, x)
        fn = torch.max if op in ("ArgMaxWithValue", "ReduceMax") else torch.min
        values, indices = fn(x, dim=axes[0], keepdim=keep)
        return [values, indices]
    if op == "TopK":
        values, indices = torch.topk(x, attr(node, "k"), dim=attr(node, "dim", -1),
                                     largest=attr(node, "largest", True), sorted=True)
        return [values, indices.int()]
    if op == "Narrow":
        return [torch.narrow(x, attr(node, "axis"), attr(node, "start"), attr(node, "length"))]
    if op == "LinSpace":
        return [torch.linspace(attr(node, "start"), attr(node, "end"), attr(node, "steps"))]
    if op == "Pad" and "paddings" in node["attrs"]:  # nn.Pad: pairs from the first dim; numpy
        flat = attr(node, "paddings")
        pairs = [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
        mode = {"CONSTANT": "constant", "REFLECT": "reflect", "SYMMETRIC": "symmetric"}[
            attr(node, "mode", "CONSTANT").upper()]
        return [torch.from_numpy(np.pad(x.numpy(), pairs, mode=mode))]
    if op == "Pad":  # ops.pad: pairs from the last dim, torch's own convention
        mode = attr(node, "mode", "constant")
        if mode == "constant":
            return [F.pad(x, attr(node, "padding"), value=attr(node, "value", 0.0) or 0.0)]
        return [F.pad(x, attr(node, "padding"), mode=mode)]
    if op == "PReLU":
        return [F.prelu(x, params[0])]
    if op == "Mod":
        a, b = with_scalar(node, ins)
        return [torch.fmod(a, b)]
    if op == "Invert":
        return [torch.bitwise_not(x)]
    if op in ("Reshape", "Flatten", "ExpandDims", "Squeeze"):
        return [x.reshape(out_shape(node))]
    if op == "Transpose":
        return [x.permute(transpose_perm(node, x))]
    if op == "Concat":
        out = out_shape(node)
        a = attr(node, "axis")
        if a is None:
            a = next((i for i in range(len(out)) if out[i] != ins[0].shape[i]), 0)
        return [torch.cat(ins, dim=a)]
    if op in ("Ones", "Zeros"):
        return [(torch.ones if op == "Ones" else torch.zeros)(
            out_shape(node), dtype=TORCH_DTYPES[node["outputs"][0]["dtype"]])]
    if op == "ZerosLike":
        return [torch.zeros_like(x)]
    if op == "Range":
        return [torch.arange(attr(node, "start"), attr(node, "limit"), attr(node, "delta"),
                             dtype=TORCH_DTYPES[node["outputs"][0]["dtype"]])]
    if op == "Unstack":
        return list(torch.unbind(x, attr(node, "axis", 0)))
    if op in ("Dropout", "Identity"):
        return [x]
    if op == "Cast":
        return [x.to(TORCH_DTYPES[node["outputs"][0]["dtype"]])]
    if op == "Gather" and node["api"] == "nn.Embedding":
        return [F.embedding(x.long(), params[0])]
    if op == "StridedSlice":
        return [eval("x" + attr(node, "index"), {"x": x})]  # the index is literal source text
    if op == "Tile":
        out = out_shape(node)
        return [x.repeat([o // s for o, s in zip(out, [1] * (len(out) - x.dim()) + list(x.shape))])]
    raise NotImplementedError(f"no torch reference for op {op} ({node['api']})")


def compare(a, b, rtol):
    a = a.detach().double().numpy() if isinstance(a, torch.Tensor) else np.asarray(a, np.float64)
    b = b.detach().double().numpy() if isinstance(b, torch.Tensor) else np.asarray(b, np.float64)
    if a.shape != b.shape:
        return False, float("inf"), float("inf"), f"shape {a.shape} vs {b.shape}"
    if a.size == 0:
        return True, 0.0, 0.0, ""
    err = float(np.max(np.abs(a - b)))
    scale = float(np.max(np.abs(b)))
    rel = err / scale if scale > 0 else err
    return err <= ATOL + rtol * scale, err, rel, ""


class TorchLeNet5(torch.nn.Module):
    """LeNet-5 written directly in torch (tests/corpus/models/lenet5.py)."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        p = self.p
        x = F.max_pool2d(F.relu(F.conv2d(x, p["conv1.weight"])), 2, 2)
        x = F.max_pool2d(F.relu(F.conv2d(x, p["conv2.weight"])), 2, 2)
        x = torch.flatten(x, 1)
        x = F.relu(F.linear(x, p["fc1.weight"], p["fc1.bias"]))
        x = F.relu(F.linear(x, p["fc2.weight"], p["fc2.bias"]))
        return F.linear(x, p["fc3.weight"], p["fc3.bias"])


class TorchFunctionalArgs(torch.nn.Module):
    """tests/runtime/models/functional_args.py written directly in torch, with the arguments its
    source passes (not read back from the graph: a runtime that dropped them must fail here)."""

    def forward(self, x):
        return (F.gelu(x, approximate="tanh"), F.gelu(x), F.leaky_relu(x, 0.01),
                F.leaky_relu(x, 0.5), F.softplus(x, beta=2, threshold=1.5), F.softplus(x),
                F.elu(x), F.leaky_relu(x, 0.3) + F.elu(x))


def fast_gelu(x):
    """MindSpore's FastGeLU: x / (1 + exp(-1.702 |x|)) * exp(0.851 (x - |x|))."""
    return x / (1 + torch.exp(-1.702 * x.abs())) * torch.exp(0.851 * (x - x.abs()))


class TorchMoreOps(torch.nn.Module):
    """tests/runtime/models/more_ops.py written directly in torch with its source's arguments
    (GroupNorm's affine parameters are MindSpore's initial ones, ones and zeros)."""

    def forward(self, x):
        return (F.group_norm(x, 2, torch.ones(4), torch.zeros(4), 1e-5), F.mish(x),
                F.mish(x * 3.0), torch.erf(x), torch.cumsum(x, 2), torch.cumsum(x, -1),
                torch.sign(x) + torch.round(x * 4.0) + torch.round(x * 2.0 + 0.5),
                F.tanhshrink(x) + F.softmin(x, dim=1) + fast_gelu(x))


class TorchSelectPad(torch.nn.Module):
    """tests/runtime/models/select_pad.py written directly in torch (numpy for nn.Pad's
    SYMMETRIC mode, which torch lacks) with its source's arguments; PReLU's slopes are the
    runtime's initial ones (MindSpore's 0.25)."""

    def __init__(self, params):
        super().__init__()
        self.w = params["prelu.w"]

    def forward(self, x):
        def np_pad(t, pairs, mode):
            return torch.from_numpy(np.pad(t.numpy(), pairs, mode=mode))
        k, l = torch.max(x, 1)
        return (x.std(1, correction=1, keepdim=True) + x.var(1, correction=0, keepdim=True),
                x.var((2, 3), correction=0), x.std(2, correction=0) + x.std(2, correction=1),
                torch.logsumexp(x * 20.0, 2, keepdim=True), torch.linalg.vector_norm(x, dim=1),
                torch.linalg.vector_norm(x, 1, dim=3)
                + torch.linalg.vector_norm(x, float("inf"), dim=3),
                *torch.max(x, 2), *torch.min(x, 3, keepdim=True), k, l,
                torch.topk(x, 2, dim=1)[0], torch.topk(x, 2, dim=1)[1].int(),
                torch.topk(x, 3, largest=False)[0], torch.topk(x, 3, largest=False)[1].int(),
                torch.narrow(x, 3, 2, 3), torch.linspace(0.5, 2.0, 7),
                F.pad(x, (1, 2, -1, 1), value=1.5),
                F.pad(x, (2, 1, 1, 3), mode="reflect") + F.pad(x, (2, 1, 1, 3), mode="replicate"),
                np_pad(x, ((0, 0), (0, 0), (1, 2), (2, 1)), "reflect"),
                np_pad(x, ((0, 0), (1, 1), (0, 0), (3, 2)), "symmetric"), F.prelu(x, self.w),
                torch.fmod(x * 5.0, 0.7) + torch.fmod(x * -5.0, x + 2.5),
                torch.bitwise_not((x * 10.0).int()))


# Cases also checked against a network written directly in torch: (module from params, what).
EXPLICIT = {
    "lenet5": (TorchLeNet5, "explicit torch.nn LeNet-5"),
    "functional_args": (lambda params: TorchFunctionalArgs(), "the arguments as written, in torch"),
    "more_ops": (lambda params: TorchMoreOps(), "the source written in torch"),
    "select_pad": (TorchSelectPad, "the source written in torch"),
}


def check_case(name, model, shapes, specs, e2e_rtol, binary, work, verbose):
    out = os.path.join(work, name)
    cmd = [binary, os.path.join(ROOT, model), "--out", out, "--dump-all", "--seed", "3"]
    for s in shapes:
        cmd += ["--input-shape", s]
    for s in specs:
        cmd += ["--input", s]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL {name}: cellscope-run failed: {r.stderr.strip()}")
        return False
    g = json.load(open(os.path.join(out, "graph.json")))
    nodes = g["nodes"]
    params = {p["name"]: load(os.path.join(out, "params", p["name"] + ".npy")) for p in g["params"]}
    ours = {}
    for n in nodes:
        for k in range(len(n["outputs"])):
            path = os.path.join(out, "values", f"{n['index']}_{k}.npy")
            if os.path.exists(path):
                ours[(n["index"], k)] = load(path)
    ok = True
    worst = (0.0, 0.0, "")
    inputs = [n for n in nodes if n["kind"] == "input"]
    chained = {}
    with torch.no_grad():
        for n in nodes:
            i = n["index"]
            if n["kind"] == "input":
                t = load(os.path.join(out, "inputs", f"{inputs.index(n)}.npy"))
                chained[(i, 0)] = t
                continue
            if n["kind"] == "parameter":
                chained[(i, 0)] = params[n["params"][0]]
                continue
            if n["kind"] == "constant" and "value" not in n["attrs"]:
                got = ours[(i, 0)]
                want = NUMPY_CONSTANTS[name](list(got.shape)) if name in NUMPY_CONSTANTS else None
                if want is None:
                    ok = False
                    print(f"FAIL {name}: constant {n['id']} {tuple(got.shape)} has no reference")
                    continue
                want = torch.from_numpy(np.ascontiguousarray(want))
                passed, err, rel, why = compare(got, want, CONSTANT_RTOL)
                if not passed:
                    ok = False
                    print(f"FAIL {name}: constant {n['id']} against numpy: max abs err {err:.3g}, "
                          f"relative {rel:.3g} {why}")
                elif verbose:
                    print(f"  ok {name}: constant {n['id']} against numpy: err {err:.3g}")
                chained[(i, 0)] = want.to(TORCH_DTYPES[n["outputs"][0]["dtype"]])
                continue
            p = [params[q] for q in n["params"]]
            # per node: the runtime's own inputs
            mine = [ours[(a, b)] for a, b in n["inputs"]]
            ref = run_op(n, mine, p)
            for k, t in enumerate(ref):
                passed, err, rel, why = compare(ours[(i, k)], t, OP_RTOL.get(n["op"], NODE_RTOL))
                if "scalar" in n["attrs"] and ours[(i, k)].dtype != t.dtype:
                    passed, why = False, f"dtype {ours[(i, k)].dtype} vs torch {t.dtype}"
                if rel > worst[1]:
                    worst = (err, rel, n["id"])
                if not passed:
                    ok = False
                    print(f"FAIL {name}: node {n['id']} ({n['op']}) output {k}: max abs err "
                          f"{err:.3g}, relative {rel:.3g} {why}")
                elif verbose:
                    print(f"  ok {name}: {n['id']} ({n['op']}) err {err:.3g} rel {rel:.3g}")
            # end to end: torch's own chain
            chain_in = [chained[(a, b)] for a, b in n["inputs"]]
            for k, t in enumerate(run_op(n, chain_in, p)):
                chained[(i, k)] = t
    e2e = []
    for j, (a, b) in enumerate(g["outputs"]):
        got = load(os.path.join(out, "outputs", f"{j}.npy"))
        rtol = max(e2e_rtol, OP_RTOL.get(nodes[a]["op"], 0) if nodes[a]["kind"] == "op" else 0)
        passed, err, rel, why = compare(got, chained[(a, b)], rtol)
        e2e.append((err, rel))
        if not passed:
            ok = False
            print(f"FAIL {name}: end-to-end output {j}: max abs err {err:.3g}, relative {rel:.3g} "
                  f"(rtol {rtol}) {why}")
    if name in EXPLICIT:
        make, what = EXPLICIT[name]
        with torch.no_grad():
            refs = make(params)(load(os.path.join(out, "inputs", "0.npy")))
        refs = refs if isinstance(refs, tuple) else (refs,)
        for j, ref in enumerate(refs):
            got = load(os.path.join(out, "outputs", f"{j}.npy"))
            passed, err, rel, why = compare(got, ref, e2e_rtol)
            e2e.append((err, rel))
            ok = ok and passed
            print(f"{'ok  ' if passed else 'FAIL'} {name}: {what}, output {j}: max abs err "
                  f"{err:.3g}, relative {rel:.3g} {why}")
    e2e_err = max((e for e, _ in e2e), default=0.0)
    e2e_rel = max((r for _, r in e2e), default=0.0)
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {len(nodes)} nodes; worst node {worst[2]!r} "
          f"abs {worst[0]:.3g} rel {worst[1]:.3g} (rtol {NODE_RTOL}); end to end abs "
          f"{e2e_err:.3g} rel {e2e_rel:.3g} (rtol {e2e_rtol})")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-rt", "bench", "cellscope-run"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--only", action="append")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    # Every node's value of the big cases takes hundreds of MB: a passing case's files are removed
    # at once (the whole run kept 1.9 GB in /tmp before, and a CI run filled its disk), a failing
    # case's are kept for a look, and --work keeps everything.
    work = a.work or tempfile.mkdtemp(prefix="cellscope-rt-")
    results = []
    for case in CASES:
        if a.only and case[0] not in a.only:
            continue
        ok = check_case(*case, a.bin, work, a.verbose)
        results.append(ok)
        if ok and not a.work:
            shutil.rmtree(os.path.join(work, case[0]), ignore_errors=True)
    kept = os.listdir(work) if os.path.isdir(work) else []
    if not kept and not a.work:
        shutil.rmtree(work, ignore_errors=True)
    where = f"files of the failing cases in {work}" if kept else "no files kept"
    print(f"{sum(results)}/{len(results)} cases pass (torch {torch.__version__}; {where})")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
