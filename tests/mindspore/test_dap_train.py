"""The debug adapter's train mode against MindSpore 2.10 (docs/dap.md, "Training"): a `cellscope
dap` session (driven here over stdio with the Debug Adapter Protocol's framing) trains
tests/dap/fixtures/train/train_mlp.py on scikit-learn's handwritten digits as MNIST idx files
(tests/training/make_data.py), and writes `train_mlp_trained.ckpt` next to the file:
- MindSpore's load_checkpoint reads it, and load_param_into_net puts every parameter of the
  network (built by MindSpore from the same file's classes) in place, none left out;
- its parameters equal, bit for bit, the checkpoint `cellscope train` writes for the same file,
  data, steps and seed: the debugger's hooks do not change the numbers;
- MindSpore's network with those weights has, on the last step's batch, a loss below the one
  the session's first `cellscope.trainStep` event reported (it was trained).
A session of export_mlp.py (the same MLP with an `ms.export(...)` call after training) also
writes the MindIR that call describes, from the trained weights, and names it in the
`cellscope.sessionArtifacts` event: MindSpore 2.10 loads it (`ms.load`, `nn.GraphCell`) and its
output equals MindSpore's own network with the trained checkpoint loaded."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tests" / "training"))

import make_data  # noqa: E402

STEPS = 6
BATCH = 16


def binary() -> Path:
    b = Path(os.environ.get("CELLSCOPE_BIN", "build/cellscope"))
    if not b.is_absolute():
        b = REPO_ROOT / b
    assert b.is_file(), f"cellscope not built at {b}"
    return b


class Dap:
    """A minimal DAP client over the adapter's stdin/stdout (Content-Length framing)."""

    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.seq = 1
        self.events = []

    def send(self, command, arguments=None):
        body = json.dumps({"seq": self.seq, "type": "request", "command": command,
                           "arguments": arguments or {}}).encode()
        self.seq += 1
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.p.stdin.flush()

    def read(self):
        length = 0
        while True:
            line = self.p.stdout.readline()
            assert line, "the adapter closed its output"
            line = line.strip()
            if not line:
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.p.stdout.read(length))

    def until(self, pred):
        while True:
            m = self.read()
            if m["type"] == "event":
                self.events.append(m)
            if pred(m):
                return m

    def close(self):
        try:
            self.send("disconnect")
            self.p.wait(timeout=30)
        finally:
            if self.p.poll() is None:
                self.p.kill()


def test_session_checkpoint_loads_in_mindspore(tmp_path):
    import mindspore as ms

    make_data.make_mnist(str(tmp_path))
    data = tmp_path / "mnist"
    program = tmp_path / "train_mlp.py"
    shutil.copy(REPO_ROOT / "tests" / "dap" / "fixtures" / "train" / "train_mlp.py", program)

    dap = Dap([str(binary()), "dap"])
    try:
        dap.send("initialize", {"adapterID": "mindspore"})
        dap.until(lambda m: m["type"] == "event" and m["event"] == "initialized")
        dap.send("launch", {"program": str(program), "mode": "train", "data": str(data),
                            "steps": STEPS, "seed": 0})
        r = dap.until(lambda m: m["type"] == "response" and m["command"] == "launch")
        assert r["success"], r
        dap.send("configurationDone")
        dap.until(lambda m: m["type"] == "event" and m["event"] == "terminated")
    finally:
        dap.close()
    steps = [e["body"] for e in dap.events if e["event"] == "cellscope.trainStep"]
    assert len(steps) == STEPS
    exited = [e["body"]["exitCode"] for e in dap.events if e["event"] == "exited"]
    assert exited == [0]
    ckpt = tmp_path / "train_mlp_trained.ckpt"
    assert ckpt.is_file()

    # The same run through `cellscope train`: the same parameters, bit for bit.
    plain = tmp_path / "plain.ckpt"
    subprocess.run([str(binary()), "train", str(program), "--data", str(data), "--steps",
                    str(STEPS), "--seed", "0", "-o", str(plain)], check=True,
                   capture_output=True, text=True, timeout=600)
    got = ms.load_checkpoint(str(ckpt))
    want = ms.load_checkpoint(str(plain))
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name].asnumpy(), want[name].asnumpy(), err_msg=name)

    # MindSpore's own network from the file's classes takes every parameter.
    sys.path.insert(0, str(tmp_path))
    try:
        source = program.read_text().split("\nnet = MLP()")[0]  # the classes, not the training
        scope: dict = {}
        exec(compile(source, str(program), "exec"), scope)  # noqa: S102 (the test's own fixture)
        net = scope["MLP"]()
    finally:
        sys.path.remove(str(tmp_path))
    not_loaded, _ = ms.load_param_into_net(net, got)
    assert not_loaded == []
    # The last step's batch (file order, no shuffle): rows (STEPS-1)*BATCH ... of the train split.
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = make_data.digits_to_mnist(digits.images)
    labels = digits.target
    rows = slice((STEPS - 1) * BATCH, STEPS * BATCH)
    x = (images[rows].astype(np.float32) / 255.0)[:, None, :, :]
    y = labels[rows].astype(np.int32)
    loss_fn = ms.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    loss = float(loss_fn(net(ms.Tensor(x)), ms.Tensor(y)).asnumpy())
    assert np.isfinite(loss)
    assert loss < steps[0]["loss"], (loss, steps[0]["loss"])


def run_session(program: Path, data: Path) -> list:
    dap = Dap([str(binary()), "dap"])
    try:
        dap.send("initialize", {"adapterID": "mindspore"})
        dap.until(lambda m: m["type"] == "event" and m["event"] == "initialized")
        dap.send("launch", {"program": str(program), "mode": "train", "data": str(data),
                            "steps": STEPS, "seed": 0})
        r = dap.until(lambda m: m["type"] == "response" and m["command"] == "launch")
        assert r["success"], r
        dap.send("configurationDone")
        dap.until(lambda m: m["type"] == "event" and m["event"] == "terminated")
    finally:
        dap.close()
    return dap.events


def test_session_mindir_loads_in_mindspore(tmp_path):
    import mindspore as ms

    make_data.make_mnist(str(tmp_path))
    program = tmp_path / "export_mlp.py"
    shutil.copy(REPO_ROOT / "tests" / "dap" / "fixtures" / "train" / "export_mlp.py", program)
    events = run_session(program, tmp_path / "mnist")
    assert [e["body"]["exitCode"] for e in events if e["event"] == "exited"] == [0]
    artifacts = [e["body"] for e in events if e["event"] == "cellscope.sessionArtifacts"]
    assert len(artifacts) == 1, artifacts
    ckpt = tmp_path / "export_mlp_trained.ckpt"
    mindir = tmp_path / "mlp_trained.mindir"  # the call's file_name, next to the file
    assert artifacts[0]["checkpoint"] == str(ckpt)
    assert artifacts[0]["mindir"] == str(mindir)

    sys.path.insert(0, str(tmp_path))
    try:
        source = program.read_text().split("\nnet = MLP()")[0]
        scope: dict = {}
        exec(compile(source, str(program), "exec"), scope)  # noqa: S102 (the test's own fixture)
        net = scope["MLP"]()
    finally:
        sys.path.remove(str(tmp_path))
    not_loaded, _ = ms.load_param_into_net(net, ms.load_checkpoint(str(ckpt)))
    assert not_loaded == []
    net.set_train(False)
    graph = ms.nn.GraphCell(ms.load(str(mindir)))
    x = np.random.default_rng(3).random((1, 1, 28, 28), dtype=np.float32)
    want = net(ms.Tensor(x)).asnumpy()
    got = graph(ms.Tensor(x)).asnumpy()
    assert got.shape == want.shape == (1, 10)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
