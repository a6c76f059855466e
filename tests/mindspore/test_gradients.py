"""Cellscope's gradients (graphcore/autodiff.h, `cellscope-run --grad`) against MindSpore's.

For each case, a Cell whose construct ends in a scalar loss:
  * build it in real MindSpore 2.10 (PyNative, CPU), give every parameter random values,
    mindspore.save_checkpoint, save a random input;
  * MindSpore: ms.value_and_grad(net, None, net.trainable_params())(x) in the case's mode
    (set_train(True) for the BatchNorm case: batch statistics, moving statistics updated);
  * Cellscope: `cellscope-run FILE --cell Net --input-shape ... --input x.npy --ckpt net.ckpt
    --grad [--train-mode] --out DIR`, then DIR/loss.npy, DIR/grads/<param>.npy and
    DIR/state/<param>.npy (the moving statistics after the step);
  * every gradient: max |cellscope - mindspore| / max |mindspore| below the case's tolerance.
The binary is found as in test_checkpoint.py ($CELLSCOPE_RUN, next to $CELLSCOPE_BIN, $BUILD_DIR).
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ground_truth as gt  # noqa: E402
import mindspore as ms  # noqa: E402
from test_checkpoint import randomize, rel_error, run_bin  # noqa: E402,F401

TIMEOUT = int(os.environ.get("CELLSCOPE_TIMEOUT", "600"))

HEADER = """import numpy as np
import mindspore as ms
from mindspore import nn, ops
"""

LENET = HEADER + """

class LeNet5(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, pad_mode='valid')
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode='valid')
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(16 * 5 * 5, 120)
        self.fc2 = nn.Dense(120, 84)
        self.fc3 = nn.Dense(84, 10)

    def construct(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.net = LeNet5()

    def construct(self, x):
        return ops.mean(ops.square(self.net(x)))
"""

CNN_BN = HEADER + """

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=1, pad_mode='pad', padding=1)
        self.bn1 = nn.BatchNorm2d(8, momentum=0.9)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, pad_mode='same', has_bias=True)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc = nn.Dense(8, 5)

    def construct(self, x):
        h = self.pool(ops.relu(self.bn1(self.conv1(x))))
        h = ops.relu(self.bn2(self.conv2(h)))
        h = ops.mean(h, (2, 3))
        return ops.mean(ops.square(self.fc(h) - 0.5))
"""

ATTENTION = HEADER + """

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Dense(16, 48)
        self.proj = nn.Dense(16, 16)
        self.ln = nn.LayerNorm((16,), epsilon=1e-5)
        self.ffn1 = nn.Dense(16, 32)
        self.gelu = nn.GELU(approximate=False)
        self.ffn2 = nn.Dense(32, 16)
        self.softmax = nn.Softmax(axis=-1)
        self.bmm = ops.BatchMatMul(transpose_b=True)

    def construct(self, x):
        q, k, v = ops.split(self.qkv(x), 16, 2)
        a = self.softmax(self.bmm(q, k) * 0.25)
        h = self.ln(x + self.proj(ops.matmul(a, v)))
        h = h + self.ffn2(self.gelu(self.ffn1(h)))
        return ops.mean(ops.square(h))
"""

# A U-Net style decoder: GroupNorm, transposed convolutions ('same' stride 2, 'pad', groups),
# reflect padding, the skip connection's concat.
DECODER = HEADER + """

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode='same', has_bias=True)
        self.gn = nn.GroupNorm(4, 8)
        self.up = nn.Conv2dTranspose(8, 6, 3, stride=2, pad_mode='same', has_bias=True)
        self.gn2 = nn.GroupNorm(2, 6)
        self.pad = nn.Pad(paddings=((0, 0), (0, 0), (1, 1), (2, 1)), mode='REFLECT')
        self.up2 = nn.Conv2dTranspose(6, 4, 3, stride=1, pad_mode='pad', padding=1, group=2)
        self.head = nn.Conv2d(7, 2, 1, has_bias=True)

    def construct(self, x):
        h = ops.silu(self.gn(self.conv(x)))
        h = ops.silu(self.gn2(self.up(h)))
        h = self.up2(self.pad(h))[:, :, 1:-1, 2:-1]
        skip = ops.tile(x, (1, 1, 2, 2))
        h = self.head(ops.concat((h, skip), 1))
        return ops.mean(ops.square(h - 0.3))
"""

# Shape and index operators of detection / transformer code: tile, stack, where, masked_fill,
# cumsum, ops.pad (constant, replicate), logsumexp, std and var (ddof 0 and 1), prod over
# values with exact zeros.
INDEXING = HEADER + """

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(6, 6)
        self.fc2 = nn.Dense(6, 3)

    def construct(self, x):
        h = self.fc(x)
        a = ops.where(h > 0, h, h * 0.1)
        m = ops.masked_fill(h, x < -0.5, 0.0)
        c = ops.cumsum(a * m, 1)
        p = ops.pad(c, (1, 2), mode='replicate')[:, :, 1:7] + ops.pad(c, (0, 0, 1, 0))[:, 1:, :]
        s = ops.stack((p, ops.tile(h[:, :1, :], (1, 4, 1))), 1)
        r = self.fc2(ops.sum(s, 1)) + ops.std(h, -1, keepdims=True) + ops.var(h, 2, 1, True)
        r = r + ops.prod(m * 0.5, -1, True)
        return ops.mean(ops.logsumexp(r, -1))
"""

# An FPN-style neck: nearest upsampling (ops.interpolate, ResizeNearestNeighbor) and
# bilinear resizes with and without align_corners, as detection and OCR necks use them; an
# adaptive max pool over clamped values (ties: the first maximum).
UPSAMPLE = HEADER + """

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3, stride=2, pad_mode='same', has_bias=True)
        self.c2 = nn.Conv2d(4, 4, 3, stride=2, pad_mode='same', has_bias=True)
        self.rn = ops.ResizeNearestNeighbor((6, 7))
        self.head = nn.Conv2d(4, 2, 1, has_bias=True)
        self.amp = nn.AdaptiveMaxPool2d((3, 4))

    def construct(self, x):
        p1 = self.c1(x)
        p2 = self.c2(p1)
        h = p1 + ops.interpolate(p2, size=(6, 7), mode='nearest')
        a = ops.interpolate(h, size=(12, 13), mode='bilinear', align_corners=False)
        b = ops.interpolate(h, size=(12, 13), mode='bilinear', align_corners=True)
        c = ops.interpolate(self.rn(ops.tanh(p2)), size=(12, 13), mode='nearest')
        m = self.amp(ops.clamp(h, -0.5, 0.2))
        return ops.mean(ops.square(self.head(a * b + c) - 0.2)) + ops.mean(m * m)
"""

# Selections: max/min with indices over clamped values (ties at the bound: MindSpore's gradient
# goes to the index only), topk values, PReLU, Softmin.
SELECTIONS = HEADER + """

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(8, 8)
        self.prelu = nn.PReLU(4, 0.3)
        self.softmin = nn.Softmin(axis=-1)
        self.fc2 = nn.Dense(8, 3)

    def construct(self, x):
        h = self.fc(x)
        c = ops.clamp(h, -0.2, 0.3)
        v, _ = ops.max(c, 2)
        w, _ = ops.min(c, 1, True)
        t, _ = ops.topk(h, 3)
        p = self.prelu(h)
        s = self.softmin(h) + w
        r = self.fc2(p * s) + ops.sum(t, 2, True) + v[:, :, None]
        return ops.mean(ops.square(r))
"""

# The recurrent layers (RecurrentGrad: backward through time): a two-layer bidirectional LSTM
# whose every output reaches the loss, a GRU fed the LSTM's output with an initial state
# computed from it, a relu RNN without biases.
RECURRENT = HEADER + """

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(10, 5, num_layers=1, bidirectional=True, batch_first=True)
        self.rnn = nn.RNN(10, 3, nonlinearity='relu', has_bias=False)
        self.fc = nn.Dense(3, 2)

    def construct(self, x):
        y, (h, c) = self.lstm(x)
        g, k = self.gru(y, ops.tanh(h[2:]))
        z, _ = self.rnn(ops.transpose(g, (1, 0, 2)))
        out = self.fc(z)
        return ops.mean(ops.square(out)) + ops.mean(h * c) + ops.mean(ops.square(k))
"""

# nn.MultiheadAttention (MultiheadAttentionGrad): self-attention with the packed in_proj_weight
# (query, key and value one tensor), cross-attention with kdim/vdim (q/k/v_proj_weight),
# batch_first, the per-head attention weights in the loss.
MHA = HEADER + """

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(6, 8)
        self.sa = nn.MultiheadAttention(8, 2)
        self.ca = nn.MultiheadAttention(8, 4, kdim=6, vdim=6, batch_first=True)

    def construct(self, x):
        h = self.fc(x)
        s = ops.transpose(h, (1, 0, 2))
        y, w = self.sa(s, s, s)
        z, u = self.ca(ops.transpose(y, (1, 0, 2)), x, x, average_attn_weights=False)
        return ops.mean(ops.square(z)) + ops.mean(ops.square(u)) + ops.mean(w * w)
"""

# ops.norm / Tensor.norm / ops.LpNorm (NormGrad): the 2-norm over everything and over dims,
# ord 1 / 3 / inf / -inf, keepdim; ReLU outputs put exact zeros under ord 1 and 3 (sign(0) = 0).
NORMS = HEADER + """

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(6, 8)
        self.lp = ops.LpNorm(axis=[1, 2], p=3)
        self.lp2 = ops.LpNorm(axis=2, keep_dims=True)

    def construct(self, x):
        h = self.fc(x)
        r = ops.relu(h)
        a = ops.norm(h) + ops.mean(ops.norm(r, 1, dim=2)) + ops.mean(h.norm(dim=(0, 2)))
        b = ops.mean(ops.norm(h, float('inf'), dim=1, keepdim=True)) + ops.mean(self.lp(r))
        c = ops.mean(ops.norm(h, float('-inf'), dim=2) * ops.norm(r, 3, dim=2))
        return a + b + c + ops.mean(self.lp2(h) * h)
"""

# ops.L2Normalize (L2NormalizeGrad): along the last axis; along axis 1 of rows scaled so small that
# the norm is clamped to sqrt(epsilon) (edgenext's XCA normalises q and k this way).
L2NORM = HEADER + """

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(6, 8)
        self.l2 = ops.L2Normalize(-1)
        self.l2_mid = ops.L2Normalize(1, 1e-2)

    def construct(self, x):
        h = self.fc(x)
        q = self.l2(h)
        k = self.l2_mid(h * 0.01)
        return ops.mean(ops.matmul(q, ops.transpose(q, (0, 2, 1)))) + ops.mean(k * h)
"""

# nn.Conv3d (Conv3DGrad): 'pad' with stride 2 and a bias, 'same' with groups and dilation,
# 'valid'.
CONV3D = HEADER + """

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv3d(2, 4, 3, stride=2, pad_mode='pad', padding=1, has_bias=True)
        self.c2 = nn.Conv3d(4, 4, (2, 3, 1), pad_mode='same', group=2, dilation=(1, 2, 1))
        self.c3 = nn.Conv3d(4, 3, 2, pad_mode='valid', has_bias=True)

    def construct(self, x):
        h = self.c3(ops.relu(self.c2(self.c1(x))))
        return ops.mean(ops.square(h))
"""

# `if` on a tensor (Merge): the gradient reaches the branch taken (decided by the data at run
# time), the other branch's parameters get zeros, as MindSpore's PyNative gradient gives.
BRANCHES = HEADER + """

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a = nn.Dense(6, 4)
        self.b = nn.Dense(6, 4)
        self.c = nn.Dense(6, 4)
        self.d = nn.Dense(6, 4)

    def construct(self, x):
        if ops.mean(x) > -100.0:
            h = ops.tanh(self.a(x))
        else:
            h = self.b(x)
        if ops.mean(x) < -100.0:
            k = self.c(x)
        else:
            k = ops.sigmoid(self.d(x))
        return ops.mean(ops.square(h * k - 0.3))
"""

# Dilated max pools (an int and an (h, w) dilation, padding, ceil_mode, return_indices): the
# gradient goes to each window's maximum over the taps d apart.
DILATED_POOL = HEADER + """

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, pad_mode='same', has_bias=True)
        self.mp = nn.MaxPool2d(3, 1, pad_mode='pad', padding=1, dilation=2)
        self.mp2 = nn.MaxPool2d(2, 2, pad_mode='pad', dilation=(2, 3), ceil_mode=True,
                                return_indices=True)
        self.fc = nn.Dense(64, 3)

    def construct(self, x):
        h = self.conv(x)
        a = self.mp(h)
        b, _ = self.mp2(h)
        return ops.mean(ops.square(a - 0.1)) + ops.mean(ops.square(self.fc(b.reshape(2, -1))))
"""

CASES: Dict[str, Dict] = {
    "lenet5": {"source": LENET, "shape": (8, 1, 32, 32), "train": False, "rtol": 1e-5},
    "cnn_batchnorm_train": {"source": CNN_BN, "shape": (4, 3, 12, 12), "train": True,
                            "rtol": 1e-4},
    "attention_block": {"source": ATTENTION, "shape": (2, 6, 16), "train": False, "rtol": 1e-5},
    "decoder_groupnorm_transpose": {"source": DECODER, "shape": (2, 3, 5, 6), "train": False,
                                    "rtol": 1e-5},
    "upsample_neck": {"source": UPSAMPLE, "shape": (2, 3, 11, 13), "train": False, "rtol": 1e-5},
    "selections": {"source": SELECTIONS, "shape": (2, 4, 8), "train": False, "rtol": 1e-5},
    "indexing_ops": {"source": INDEXING, "shape": (2, 4, 6), "train": False, "rtol": 1e-5},
    "recurrent_lstm_gru_rnn": {"source": RECURRENT, "shape": (3, 7, 6), "train": False,
                               "rtol": 1e-4},
    "multihead_attention": {"source": MHA, "shape": (2, 5, 6), "train": False, "rtol": 1e-4},
    "norms": {"source": NORMS, "shape": (3, 5, 6), "train": False, "rtol": 1e-4},
    "l2_normalize": {"source": L2NORM, "shape": (3, 5, 6), "train": False, "rtol": 1e-4},
    "dilated_max_pool": {"source": DILATED_POOL, "shape": (2, 3, 9, 9), "train": False,
                         "rtol": 1e-5},
    "conv3d": {"source": CONV3D, "shape": (2, 2, 7, 8, 6), "train": False, "rtol": 1e-4},
    # 1e-4: MindSpore's a.weight gradient is 6.5e-5 off a float64 reference, Cellscope's 1.8e-7.
    "if_branches": {"source": BRANCHES, "shape": (3, 6), "train": False, "rtol": 1e-4},
}


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", list(CASES))
def test_gradients_match_mindspore(name: str, run_bin: Path, tmp_path: Path) -> None:
    case = CASES[name]
    gt.setup_mindspore()
    src = tmp_path / ("grad_%s.py" % name)
    src.write_text(case["source"])
    net = load(src, "grad_" + name).Net()
    rng = np.random.default_rng(7)
    randomize(net, rng)
    ckpt = tmp_path / "net.ckpt"
    ms.save_checkpoint(net, str(ckpt))
    x = rng.standard_normal(case["shape"]).astype(np.float32)
    x_npy = tmp_path / "x.npy"
    np.save(x_npy, x)

    net.set_train(case["train"])
    params = net.trainable_params()
    loss, grads = ms.value_and_grad(net, None, params)(ms.Tensor(x))

    out = tmp_path / "out"
    cmd = [str(run_bin), str(src), "--cell", "Net", "--input-shape",
           ",".join(str(d) for d in case["shape"]), "--input", str(x_npy), "--ckpt", str(ckpt),
           "--grad", "--out", str(out)]
    if case["train"]:
        cmd.append("--train-mode")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, "`%s` failed (%d):\n%s" % (" ".join(cmd), proc.returncode,
                                                           proc.stderr[-4000:])
    got_loss = float(np.load(out / "loss.npy"))
    assert abs(got_loss - float(loss.asnumpy())) <= case["rtol"] * max(1.0, abs(got_loss))

    worst = 0.0
    for p, g in zip(params, grads):
        want = g.asnumpy().astype(np.float64)
        got = np.load(out / "grads" / (p.name + ".npy"))
        assert got.shape == want.shape, p.name
        if np.max(np.abs(want)) < 1e-6:
            # A gradient that vanishes analytically (a bias right before a BatchNorm in training:
            # the batch mean removes it) is rounding noise in both: compare absolutely.
            print("%s: %s vanishes (MindSpore max %.3g, Cellscope %.3g)" %
                  (name, p.name, np.max(np.abs(want)), np.max(np.abs(got))))
            assert np.max(np.abs(got)) < 1e-5, p.name
            continue
        err = rel_error(got, want)
        print("%s: %s max rel error %.3g" % (name, p.name, err))
        worst = max(worst, err)
        assert err < case["rtol"], "%s: gradient of %s off by %.3g" % (name, p.name, err)
    # The moving statistics after the training step (BatchNorm in train mode).
    for p in net.get_parameters():
        if p.name.endswith(("moving_mean", "moving_variance")) and case["train"]:
            got = np.load(out / "state" / (p.name + ".npy"))
            err = rel_error(got, p.asnumpy().astype(np.float64))
            print("%s: %s (state) max rel error %.3g" % (name, p.name, err))
            assert err < case["rtol"], p.name
    print("%s: loss %.6g (MindSpore %.6g), worst gradient rel error %.3g" %
          (name, got_loss, float(loss.asnumpy()), worst))
