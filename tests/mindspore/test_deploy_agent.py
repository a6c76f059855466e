"""`cellscope agent` answers with the numbers MindSpore computes for the same .mindir (issue 20).

A LeNet-style Cell (tests/deploy/models.py, Small) is exported twice: by MindSpore 2.10
(`mindspore.export`, seeded initial weights) and by `cellscope export`. Each file is deployed with
`cellscope deploy` to an agent on 127.0.0.1 (a free port, a temporary state directory), and the
agent's /v1/infer output on a seeded random input is compared with `mindspore.load` +
`nn.GraphCell` on the same file and input. The agent runs with this interpreter as its
`--python`, so its mindspore backend (the MindIR served by MindSpore in a subprocess) is checked
against the CPU runtime and against MindSpore in this process. Binary: $CELLSCOPE_BIN (default build/cellscope);
missing: skipped, unless CELLSCOPE_REQUIRE_BIN=1.
"""
from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import time
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
    port, proc = start_agent(tmp_path_factory.mktemp("state"), sys.executable)
    yield port
    proc.terminate()
    proc.wait(10)
    proc.stdout.close()


def start_agent(state, python):
    env = dict(os.environ, CELLSCOPE_AGENT_TOKEN=TOKEN)
    proc = subprocess.Popen([str(BIN), "agent", "--listen", "127.0.0.1:0", "--state-dir",
                             str(state), "--python", python], stdout=subprocess.PIPE, text=True,
                            env=env)
    line = proc.stdout.readline()
    assert "listening on https://127.0.0.1:" in line, line
    port = int(line.split("127.0.0.1:")[1].split(" ")[0])
    return port, proc


def deploy(port, project, model, *extra, ok=True):
    (project / "mindspore_config.json").write_text(json.dumps(
        {"devices": [{"name": "local", "address": f"127.0.0.1:{port}", "token_env": "TK"}]}))
    env = dict(os.environ, TK=TOKEN, HOME=str(project))
    r = subprocess.run([str(BIN), "deploy", str(model), "--device", "local", *extra],
                       cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert (r.returncode == 0) == ok, r.stderr
    return r


def call(port, method, path, body=None):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(f"https://127.0.0.1:{port}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode())
    req.add_header("Authorization", "Bearer " + TOKEN)
    with urllib.request.urlopen(req, context=ctx, timeout=60) as r:
        return json.loads(r.read())


def infer(port, x, **extra):
    body = {"inputs": [{"shape": list(x.shape), "data": x.ravel().tolist()}], **extra}
    out = call(port, "POST", "/v1/infer", body)["outputs"][0]
    return np.array(out["data"], dtype=np.float32).reshape(out["shape"])


def mindspore_backend(port):
    """/v1/info's mindspore entry once the agent has found out (an import takes seconds)."""
    deadline = time.time() + 180
    while time.time() < deadline:
        b = {x["name"]: x for x in call(port, "GET", "/v1/info")["backends"]}["mindspore"]
        if b["available"] is not None:
            return b
        time.sleep(0.5)
    raise AssertionError("the agent did not finish detecting mindspore")


def lite_backend(port):
    """/v1/info's mindspore-lite entry once detected (after mindspore's)."""
    deadline = time.time() + 240
    while time.time() < deadline:
        b = {x["name"]: x for x in call(port, "GET", "/v1/info")["backends"]}["mindspore-lite"]
        if b["available"] is not None:
            return b
        time.sleep(0.5)
    raise AssertionError("the agent did not finish detecting mindspore_lite")


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


def test_mindspore_backend_on_the_device(agent, tmp_path):
    """`--backend mindspore`: the agent serves /v1/infer through MindSpore 2.10 (mindspore.load +
    nn.GraphCell in its subprocess); equal to this process's MindSpore and, within 1e-4, to
    the agent's own CPU runtime on the same bundle."""
    gt.setup_mindspore()
    b = mindspore_backend(agent)
    assert b["available"] is True, b
    assert b["version"] == ms.__version__
    # MindSpore Lite: detected and reported, never served through. Its wheel is not on the
    # index this machine reaches, so here it is reported missing, with the reason.
    try:
        import mindspore_lite  # noqa: F401
        has_lite = True
    except ImportError:
        has_lite = False
    lite = lite_backend(agent)
    assert lite["serving"] is False and lite["available"] is has_lite, lite
    assert ("does not serve through it" if has_lite else "cannot import mindspore_lite") \
        in lite["reason"], lite
    ms.set_seed(11)
    module = gt.load_module(str(gt.REPO_ROOT / "tests" / "deploy" / "models.py"))
    net = module.Small()
    net.set_train(False)
    ms.export(net, ms.Tensor(np.ones((1, 1, 32, 32), np.float32)),
              file_name=str(tmp_path / "msb"), file_format="MINDIR")
    model = tmp_path / "msb.mindir"
    r = deploy(agent, tmp_path, model, "--backend", "mindspore")
    assert '"backend":"mindspore"' in r.stdout, r.stdout
    info = call(agent, "GET", "/v1/info")
    assert info["backend"] == "mindspore"
    assert info["current"]["backend"] == "mindspore"
    x = np.random.default_rng(9).standard_normal((1, 1, 32, 32)).astype(np.float32)
    answer = call(agent, "POST", "/v1/infer",
                  {"inputs": [{"shape": [1, 1, 32, 32], "data": x.ravel().tolist()}]})
    assert answer["backend"] == "mindspore"
    got = np.array(answer["outputs"][0]["data"], np.float32).reshape(1, 10)
    cpu = infer(agent, x, backend="cellscope-cpu")
    want = mindspore_run(model, x)
    assert np.abs(want).max() > 1e-3
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(cpu, got, rtol=1e-4, atol=1e-5)
    # int8 with the mindspore backend: MindSpore runs the MindIR as exported, so the bundle is
    # served by the CPU runtime's int8 path, and the deploy's output, the manifest and /v1/info
    # say so and why (issue 20: never silent).
    cal = tmp_path / "cal.npy"
    np.save(cal, np.random.default_rng(3).standard_normal((4, 1, 32, 32)).astype(np.float32))
    r = deploy(agent, tmp_path, model, "--backend", "mindspore", "--precision", "int8",
               "--calibration-data", str(cal))
    assert "served by cellscope-cpu, not mindspore: the mindspore backend" in r.stdout, r.stdout
    assert "cannot apply the int8 table" in r.stdout
    info = call(agent, "GET", "/v1/info")
    assert (info["backend"], info["precision"]) == ("cellscope-cpu", "int8")
    assert info["current"]["requested_backend"] == "mindspore"
    assert info["backend_reason"] == info["current"]["backend_reason"]
    assert "cannot apply the int8 table" in info["backend_reason"]
    answer = call(agent, "POST", "/v1/infer",
                  {"inputs": [{"shape": [1, 1, 32, 32], "data": x.ravel().tolist()}]})
    assert (answer["backend"], answer["precision"]) == ("cellscope-cpu", "int8")
    # Deployed again the same way: already serving (the request, not the serving backend, is
    # what is compared).
    r = deploy(agent, tmp_path, model, "--backend", "mindspore", "--precision", "int8",
               "--calibration-data", str(cal), "--progress", "json")
    done = json.loads(r.stdout.strip().splitlines()[-1])
    assert done["already_current"] is True and done["backend"] == "cellscope-cpu", done
    assert "cannot apply the int8 table" in done["backend_reason"]
    # The same file again on the CPU runtime is a new bundle, not "already serves".
    r = deploy(agent, tmp_path, model)
    assert "already serves" not in r.stderr
    assert call(agent, "GET", "/v1/info")["backend"] == "cellscope-cpu"


def test_mindspore_backend_missing_refused(tmp_path):
    """An interpreter without MindSpore: reported unavailable, and a --backend mindspore deploy
    fails to load on the device (rolled back, nothing serves)."""
    port, proc = start_agent(tmp_path / "state", "/bin/false")
    try:
        b = mindspore_backend(port)
        assert b["available"] is False and "cannot import mindspore" in b["reason"], b
        model = tmp_path / "small.mindir"
        r = subprocess.run([str(BIN), "export", str(gt.REPO_ROOT / "tests" / "deploy" /
                                                     "models.py"), "--cell", "Small", "--input",
                            "1,1,32,32", "-o", str(model)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        r = deploy(port, tmp_path, model, "--backend", "mindspore", ok=False)
        assert "[load-failed]" in r.stderr and "MindSpore did not load the model" in r.stderr
        assert call(port, "GET", "/v1/info")["current"] is None
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
