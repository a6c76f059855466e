"""`cellscope agent` answers with the numbers MindSpore computes for the same .mindir (issue 20).

A LeNet-style Cell (tests/deploy/models.py, Small) is exported twice: by MindSpore 2.10
(`mindspore.export`, seeded initial weights) and by `cellscope export`. Each file is deployed with
`cellscope deploy` to an agent on 127.0.0.1 (a free port, a temporary state directory), and the
agent's /v1/infer output on a seeded random input is compared with `mindspore.load` +
`nn.GraphCell` on the same file and input. Binary: $CELLSCOPE_BIN (default build/cellscope);
missing: skipped, unless CELLSCOPE_REQUIRE_BIN=1.
"""
from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ground_truth as gt  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402

BIN = Path(os.environ.get("CELLSCOPE_BIN", gt.REPO_ROOT / "build" / "cellscope"))
TOKEN = "mindspore-tier-token-0123456789"

if not BIN.exists():
    if os.environ.get("CELLSCOPE_REQUIRE_BIN") == "1":
        raise RuntimeError(f"{BIN} is missing")
    pytest.skip(f"{BIN} is missing", allow_module_level=True)


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    env = dict(os.environ, CELLSCOPE_AGENT_TOKEN=TOKEN)
    proc = subprocess.Popen([str(BIN), "agent", "--listen", "127.0.0.1:0", "--state-dir",
                             str(state)], stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    assert "listening on https://127.0.0.1:" in line, line
    port = int(line.split("127.0.0.1:")[1].split(" ")[0])
    yield port
    proc.terminate()
    proc.wait(10)
    proc.stdout.close()


def deploy(port, project, model):
    (project / "mindspore_config.json").write_text(json.dumps(
        {"devices": [{"name": "local", "address": f"127.0.0.1:{port}", "token_env": "TK"}]}))
    env = dict(os.environ, TK=TOKEN, HOME=str(project))
    r = subprocess.run([str(BIN), "deploy", str(model), "--device", "local"], cwd=project,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def infer(port, x):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    body = {"inputs": [{"shape": list(x.shape), "data": x.ravel().tolist()}]}
    req = urllib.request.Request(f"https://127.0.0.1:{port}/v1/infer", method="POST",
                                 data=json.dumps(body).encode())
    req.add_header("Authorization", "Bearer " + TOKEN)
    with urllib.request.urlopen(req, context=ctx, timeout=60) as r:
        out = json.loads(r.read())["outputs"][0]
    return np.array(out["data"], dtype=np.float32).reshape(out["shape"])


def mindspore_run(model, x):
    graph = ms.load(str(model))
    return nn.GraphCell(graph)(ms.Tensor(x)).asnumpy()


@pytest.mark.parametrize("writer", ["mindspore", "cellscope"])
def test_agent_matches_mindspore(agent, tmp_path, writer):
    gt.setup_mindspore()
    model = tmp_path / "small.mindir"
    if writer == "mindspore":
        ms.set_seed(7)
        module = gt.load_module(str(gt.REPO_ROOT / "tests" / "deploy" / "models.py"))
        net = module.Small()
        net.set_train(False)
        ms.export(net, ms.Tensor(np.ones((1, 1, 32, 32), np.float32)),
                  file_name=str(tmp_path / "small"), file_format="MINDIR")
    else:
        r = subprocess.run([str(BIN), "export", str(gt.REPO_ROOT / "tests" / "deploy" /
                                                     "models.py"), "--cell", "Small", "--input",
                            "1,1,32,32", "--seed", "3", "-o", str(model)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    assert model.exists()
    deploy(agent, tmp_path, model)
    x = np.random.default_rng(5).standard_normal((1, 1, 32, 32)).astype(np.float32)
    got = infer(agent, x)
    want = mindspore_run(model, x)
    assert got.shape == want.shape == (1, 10)
    assert np.abs(want).max() > 1e-3  # not a degenerate all-zero answer
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
