"""Issue 20's INT8 goal (docs/precision.md): LeNet-5 (tests/training/scripts/lenet_model_train.py)
trained by `cellscope train` on the real digits (tests/training/make_data.py: scikit-learn's
load_digits as MNIST files) keeps its top-1 accuracy within one point of fp32 on held-out digits
(the t10k split, never trained on) under int8 post-training quantisation, for each calibration
method. The binary is $CELLSCOPE_BIN (default build/cellscope)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "tests" / "training" / "scripts" / "lenet_model_train.py"
EPOCHS = 40  # 1,500 digits, batch 32: 1,840 steps, ~93 % on t10k
# The t10k split holds 297 digits: 9 batches of 32, 3 calibrate, 6 (192 digits) are compared.
CALIBRATION_BATCHES = 3
EVAL_BATCHES = 6


def binary() -> Path:
    b = Path(os.environ.get("CELLSCOPE_BIN", "build/cellscope"))
    b = b if b.is_absolute() else REPO_ROOT / b
    assert b.is_file(), f"cellscope not built at {b}"
    return b


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("quant")
    subprocess.run([sys.executable, str(REPO_ROOT / "tests" / "training" / "make_data.py"),
                    str(tmp)], check=True, stdout=subprocess.DEVNULL)
    ckpt = tmp / "lenet.ckpt"
    r = subprocess.run([str(binary()), "train", str(SCRIPT), "--data", str(tmp / "mnist"),
                        "--epochs", str(EPOCHS), "-o", str(ckpt), "--format", "json"],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-4000:]
    return tmp, ckpt


@pytest.mark.parametrize("method", ["minmax", "percentile", "kl"])
def test_lenet_int8_top1_within_one_point_of_fp32(trained, method):
    tmp, ckpt = trained
    table = tmp / f"lenet_{method}.json"
    r = subprocess.run([str(binary()), "train", str(SCRIPT), "--data", str(tmp / "mnist"),
                        "--steps", "0", "--checkpoint", str(ckpt), "--drift", "int8",
                        "--calibration", method, "--calibration-batches",
                        str(CALIBRATION_BATCHES), "--eval-batches", str(EVAL_BATCHES),
                        "--quant-table", str(table), "--format", "json"],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-4000:]
    drift = json.loads(r.stdout)["drift"]
    print(json.dumps({k: drift[k] for k in ("calibration", "samples", "accuracy_fp32",
                                             "accuracy_precision", "top1_agreement")}))
    assert drift["calibration"] == method
    assert drift["data"].startswith("the test split"), drift["data"]
    assert drift["samples"] == 32 * EVAL_BATCHES
    # A trained network (the comparison means nothing on an untrained one).
    assert drift["accuracy_fp32"] >= 0.9, drift
    assert abs(drift["accuracy_fp32"] - drift["accuracy_precision"]) <= 0.01 + 1e-9, drift
    # Every Conv2D and Dense ran on int8 operands, and the table names each by its weight.
    quantised = [d["node"] for d in drift["layers"] if d["quantized"]]
    assert len(quantised) == 5, drift["layers"]
    t = json.loads(table.read_text())
    assert sorted(n["weight"] for n in t["nodes"]) == sorted(
        f"{p}.weight" for p in ("conv1", "conv2", "fc1", "fc2", "fc3"))


def test_lenet_int8_through_the_deploy_agent(trained):
    """The same goal on the device side (docs/deploy.md, "INT8 bundles"): the trained LeNet-5,
    exported by `cellscope export` (batch 32), deployed with `--precision int8 --calibration kl`
    and 3 batches of t10k digits (MindSpore's own dataset pipeline makes them) to a `cellscope
    agent` on 127.0.0.1; the agent's /v1/infer at int8 and at fp32 on the 6 held-out batches:
    top-1 within one point, fp32 at least 90 %."""
    import ssl
    import urllib.request

    import numpy as np
    import mindspore as ms
    import mindspore.dataset as ds
    import mindspore.dataset.vision as vision
    import mindspore.dataset.transforms as transforms

    tmp, ckpt = trained
    model = tmp / "lenet_b32.mindir"
    r = subprocess.run([str(binary()), "export", str(SCRIPT), "--cell", "LeNet5", "--input",
                        "32,1,32,32", "--checkpoint", str(ckpt), "-o", str(model)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    # The training script's pipeline on the test split (never trained on).
    d = ds.MnistDataset(str(tmp / "mnist"), usage="test", shuffle=False)
    d = d.map(operations=transforms.TypeCast(ms.int32), input_columns="label")
    d = d.map(operations=[vision.Resize((32, 32)), vision.Rescale(1.0 / 255.0, 0.0),
                          vision.Rescale(1 / 0.3081, -1 * 0.1307 / 0.3081), vision.HWC2CHW()],
              input_columns="image")
    batches = list(d.batch(32, drop_remainder=True).create_tuple_iterator(output_numpy=True))
    assert len(batches) >= CALIBRATION_BATCHES + EVAL_BATCHES
    cal = np.concatenate([b[0] for b in batches[:CALIBRATION_BATCHES]]).astype(np.float32)
    np.save(tmp / "cal.npy", cal)
    np.save(tmp / "cal_labels.npy",
            np.concatenate([b[1] for b in batches[:CALIBRATION_BATCHES]]).astype(np.int64))

    token = "quant-accuracy-agent-token-0123"
    env = dict(os.environ, CELLSCOPE_AGENT_TOKEN=token)
    agent = subprocess.Popen([str(binary()), "agent", "--listen", "127.0.0.1:0", "--state-dir",
                              str(tmp / "agent-state")], stdout=subprocess.PIPE, text=True,
                             env=env)
    try:
        line = agent.stdout.readline()
        assert "listening on https://127.0.0.1:" in line, line
        port = int(line.split("127.0.0.1:")[1].split(" ")[0])
        project = tmp / "project"
        project.mkdir(exist_ok=True)
        (project / "mindspore_config.json").write_text(json.dumps(
            {"devices": [{"name": "local", "address": f"127.0.0.1:{port}",
                          "token_env": "TK"}]}))
        r = subprocess.run([str(binary()), "deploy", str(model), "--device", "local",
                            "--precision", "int8", "--calibration", "kl",
                            "--calibration-data", str(tmp / "cal.npy"),
                            "--labels", str(tmp / "cal_labels.npy")],
                           cwd=project, env=dict(os.environ, TK=token, HOME=str(project)),
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr

        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE

        def call(method, path, body=None):
            req = urllib.request.Request(f"https://127.0.0.1:{port}{path}", method=method,
                                         data=None if body is None else json.dumps(body).encode())
            req.add_header("Authorization", "Bearer " + token)
            with urllib.request.urlopen(req, context=ctx, timeout=120) as resp:
                return json.loads(resp.read())

        info = call("GET", "/v1/info")
        assert info["precision"] == "int8" and info["calibration"]["method"] == "kl"
        assert info["quality"]["samples"] == 32 * CALIBRATION_BATCHES
        correct = {"int8": 0, "fp32": 0}
        n = 0
        for x, y in batches[CALIBRATION_BATCHES:CALIBRATION_BATCHES + EVAL_BATCHES]:
            body = {"inputs": [{"shape": [32, 1, 32, 32], "data": x.ravel().tolist()}]}
            for precision in correct:
                out = call("POST", "/v1/infer", dict(body, precision=precision))
                assert out["precision"] == precision
                logits = np.array(out["outputs"][0]["data"]).reshape(32, 10)
                correct[precision] += int((logits.argmax(1) == y).sum())
            n += 32
        acc = {k: v / n for k, v in correct.items()}
        print(json.dumps({"agent": acc, "samples": n, "load_quality": info["quality"]}))
        assert n == 32 * EVAL_BATCHES
        assert acc["fp32"] >= 0.9, acc
        assert abs(acc["fp32"] - acc["int8"]) <= 0.01 + 1e-9, acc
    finally:
        agent.terminate()
        agent.wait(10)
        agent.stdout.close()


# ResNet-50 int8 through the agent (issue 20: "ResNet-50's int8 vs fp32 cosine is reported").
# Measured (2026-12-06, seed-0 weights, 8 seeded standard-normal calibration inputs, minmax):
# the load's cosine on the calibration inputs 0.999965, on the held-out normal input 0.999964,
# and the int8 answer against MindSpore's own fp32 answer 0.999964. The bounds leave a 25x margin on 1 - cosine
# (4e-5 measured, 1e-3 allowed): a broken scale or a layer left in float would show as 1e-2 or
# worse, an int8 path that is the fp32 path as exactly 1.
RESNET_COSINE_BOUND = 0.999
RESNET_CAL_SAMPLES = 8


def test_resnet50_int8_cosine_through_the_deploy_agent(tmp_path):
    """ResNet-50 (tests/corpus/models/resnet50.py, weights from seed 0) exported by `cellscope
    export` at batch 1 and deployed with `--precision int8 --calibration minmax` and 8 seeded
    standard-normal inputs (no image data set is needed for a cosine: the figure says how close
    the int8 path is to fp32 on inputs of that distribution; random weights make top-1 agreement
    easy, so the cosine is what is asserted). The agent's quality figures are reported and above
    the bound; on a held-out input the agent's fp32 equals MindSpore 2.10 (`mindspore.load` +
    `nn.GraphCell`) and its int8 answer's cosine against MindSpore's is above the bound too."""
    import ssl
    import urllib.request

    import numpy as np
    import mindspore as ms
    from mindspore import nn

    sys.path.insert(0, str(REPO_ROOT / "tests" / "mindspore"))
    import ground_truth as gt

    gt.setup_mindspore()  # PyNative on CPU, once per process, as the tier's other files
    model = tmp_path / "resnet50_b1.mindir"
    r = subprocess.run([str(binary()), "export",
                        str(REPO_ROOT / "tests" / "corpus" / "models" / "resnet50.py"),
                        "--entry", "resnet50()", "--input", "1,3,224,224", "--seed", "0", "-o",
                        str(model)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    rng = np.random.default_rng(20)
    cal = rng.standard_normal((RESNET_CAL_SAMPLES, 3, 224, 224)).astype(np.float32)
    np.save(tmp_path / "cal.npy", cal)
    held_out = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)

    token = "resnet50-int8-agent-token-0123"
    agent = subprocess.Popen([str(binary()), "agent", "--listen", "127.0.0.1:0", "--state-dir",
                              str(tmp_path / "agent-state")], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, CELLSCOPE_AGENT_TOKEN=token))
    try:
        line = agent.stdout.readline()
        assert "listening on https://127.0.0.1:" in line, line
        port = int(line.split("127.0.0.1:")[1].split(" ")[0])
        project = tmp_path / "project"
        project.mkdir()
        (project / "mindspore_config.json").write_text(json.dumps(
            {"devices": [{"name": "local", "address": f"127.0.0.1:{port}",
                          "token_env": "TK"}]}))
        r = subprocess.run([str(binary()), "deploy", str(model), "--device", "local",
                            "--precision", "int8", "--calibration", "minmax",
                            "--calibration-data", str(tmp_path / "cal.npy")],
                           cwd=project, env=dict(os.environ, TK=token, HOME=str(project)),
                           capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr
        assert "int8 vs fp32:" in r.stdout

        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE

        def call(method, path, body=None):
            req = urllib.request.Request(f"https://127.0.0.1:{port}{path}", method=method,
                                         data=None if body is None else json.dumps(body).encode())
            req.add_header("Authorization", "Bearer " + token)
            with urllib.request.urlopen(req, context=ctx, timeout=300) as resp:
                return json.loads(resp.read())

        q = call("GET", "/v1/info")["quality"]
        assert q["on"] == "calibration data" and q["samples"] == RESNET_CAL_SAMPLES, q
        assert q["quantized_nodes"] == 54, q  # ResNet-50: 53 convolutions and the classifier
        assert isinstance(q["cosine"], float) and RESNET_COSINE_BOUND < q["cosine"] < 1.0, q

        body = {"inputs": [{"shape": [1, 3, 224, 224], "data": held_out.ravel().tolist()}]}
        got = call("POST", "/v1/infer", dict(body, compare=True))
        f32 = call("POST", "/v1/infer", dict(body, precision="fp32"))
        i8 = np.array(got["outputs"][0]["data"], dtype=np.float64)
        o32 = np.array(f32["outputs"][0]["data"], dtype=np.float64)
        assert got["precision"] == "int8" and not np.array_equal(i8, o32)
        assert RESNET_COSINE_BOUND < got["agreement"]["cosine"] < 1.0, got["agreement"]

        # GraphCell needs GRAPH_MODE; the tier's other files expect ground_truth's PyNative
        # context, so it is restored (leaving it set broke test_runtime_ops' models)
        ms.set_context(mode=ms.GRAPH_MODE)
        try:
            want = nn.GraphCell(ms.load(str(model)))(ms.Tensor(held_out)).asnumpy().ravel()
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
        want = want.astype(np.float64)
        np.testing.assert_allclose(o32, want, rtol=1e-3, atol=1e-5)
        cos_ms = float(i8 @ want / np.sqrt((i8 @ i8) * (want @ want)))
        print(json.dumps({"load_quality": q, "held_out": got["agreement"],
                          "int8_vs_mindspore_cosine": cos_ms}))
        assert RESNET_COSINE_BOUND < cos_ms < 1.0
        assert abs(cos_ms - got["agreement"]["cosine"]) < 1e-5
    finally:
        agent.terminate()
        agent.wait(10)
        agent.stdout.close()
