"""`cellscope launch --msrun` runs MindSpore 2.10's own msrun (issue 21, docs/parallel.md
"Launching on a cluster").

(a) two local CPU workers train a data-parallel Dense (init(), data_parallel, TrainOneStepCell with
    DistributedGradReducer): exit 0, each rank's own line (its rank id, the group size and a
    finite loss) under its `[rank N]` prefix;
(b) a script with a shape error is refused before msrun starts: exit 1, the located error printed,
    no log directory made;
(c) a worker that raises: the job's non-zero exit, the traceback under that rank's prefix;
(d) SIGTERM to `cellscope launch` while the workers run leaves no process of the job (pgrep on a
    marker only the job's command lines carry), exit 143;
and the command line it builds from mindspore_config.json's `cluster` (--dry-run), a hostfile of
two nodes (the other node's command printed), and the configuration errors it refuses.

The interpreter is this one (the msvenv): `cluster.python`. Only (a) imports MindSpore in the
workers (about 30 s here); (c) and (d) run plain scripts under msrun. Binary: $CELLSCOPE_BIN
(default build/cellscope); missing: skipped, unless CELLSCOPE_REQUIRE_BIN=1.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ground_truth as gt  # noqa: E402

BIN = Path(os.environ.get("CELLSCOPE_BIN", gt.REPO_ROOT / "build" / "cellscope"))

if not BIN.exists():
    if os.environ.get("CELLSCOPE_REQUIRE_BIN") == "1":
        raise RuntimeError(f"{BIN} is missing")
    pytest.skip(f"{BIN} is missing", allow_module_level=True)

DATA_PARALLEL = """\
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn
from mindspore.communication import get_group_size, get_rank, init

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_device("CPU")
init()
ms.set_auto_parallel_context(parallel_mode="data_parallel", gradients_mean=True)

net = nn.Dense(16, 4)
step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 0.1))
inputs = (Tensor(np.ones((8, 16), np.float32)), Tensor(np.zeros((8, 4), np.float32)))
for i in range(3):
    loss = step(*inputs)
print("trained rank", get_rank(), "of", get_group_size(), "loss", float(loss.asnumpy()),
      "finite", bool(np.isfinite(loss.asnumpy())))
"""

# The same script with a forward pass on a batch of 32 features where the Dense takes 16: the
# check's shape error (reported at the Dense, line 11).
SHAPE_ERROR = DATA_PARALLEL.replace(
    "for i in range(3):",
    "print(net(Tensor(np.ones((8, 32), np.float32))).shape)\nfor i in range(3):")

# msrun sets RANK_ID for every worker (and 0 for the scheduler, which runs the script too).
FAILING = """\
import os
import sys
rank = int(os.environ["RANK_ID"])
role = os.environ.get("MS_ROLE")
print("worker", rank, role, flush=True)
def load_shard(r):
    raise ValueError("shard %d is missing" % r)
if role == "MS_WORKER" and rank == 1:
    load_shard(rank)
"""

SLEEPING = """\
import os
import sys
import time
print("running", os.environ["RANK_ID"], os.environ.get("MS_ROLE"), sys.argv[1], flush=True)
time.sleep(600)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def project(tmp_path, script_text, cluster=None, name="train.py"):
    (tmp_path / name).write_text(script_text)
    config = {"cluster": {"worker_num": 2, "master_port": free_port(), "python": sys.executable,
                          **(cluster or {})}}
    (tmp_path / "mindspore_config.json").write_text(json.dumps(config))
    return tmp_path / name


def launch(script, *extra, timeout=300):
    return subprocess.run([str(BIN), "launch", "--msrun", str(script), *extra],
                          cwd=script.parent, capture_output=True, text=True, timeout=timeout)


def rank_lines(stdout, rank):
    return [line[len(f"[rank {rank}] "):] for line in stdout.splitlines()
            if line.startswith(f"[rank {rank}] ")]


def test_data_parallel_two_cpu_workers(tmp_path):
    script = project(tmp_path, DATA_PARALLEL)
    r = launch(script)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr
    assert "no problems in 1 file" in r.stderr
    for rank in (0, 1):
        trained = [line for line in rank_lines(r.stdout, rank) if line.startswith("trained rank")]
        assert len(trained) == 1, r.stdout[-4000:]
        m = re.fullmatch(r"trained rank (\d) of (\d) loss (\S+) finite True", trained[0])
        assert m and int(m.group(1)) == rank and int(m.group(2)) == 2, trained
    # The scheduler's log is streamed too, and the logs are where the configuration says.
    assert any(line.startswith("[scheduler] ") for line in r.stdout.splitlines())
    assert (tmp_path / "msrun_log" / "worker_1.log").is_file()
    # msrun's own tail of the worker logs is off: no unprefixed copy of a rank's line.
    assert not any(line.startswith("trained rank") for line in r.stdout.splitlines())


def test_analysis_error_refuses_before_msrun(tmp_path):
    script = project(tmp_path, SHAPE_ERROR)
    r = launch(script, timeout=120)
    assert r.returncode == 1, r.stderr
    assert re.search(r"train\.py:11:\d+: error: nn\.Dense expects 16 input features .* "
                     r"\(8, 32\) \[shape-mismatch\]", r.stderr), r.stderr
    assert "not launched" in r.stderr
    assert not (tmp_path / "msrun_log").exists()
    assert r.stdout == ""


def test_failing_worker_exit_code_and_traceback(tmp_path):
    script = project(tmp_path, FAILING)
    r = launch(script)
    assert r.returncode != 0, r.stdout
    rank1 = rank_lines(r.stdout, 1)
    assert "Traceback (most recent call last):" in rank1, r.stdout
    assert "ValueError: shard 1 is missing" in rank1, r.stdout
    assert not any("Traceback" in line for line in rank_lines(r.stdout, 0)), r.stdout
    assert "the job ended with exit code" in r.stderr


def test_sigterm_leaves_nothing_running(tmp_path):
    marker = "cellscope-msrun-test-" + uuid.uuid4().hex
    script = project(tmp_path, SLEEPING, cluster={"cluster_time_out": 60})
    proc = subprocess.Popen([str(BIN), "launch", "--msrun", str(script), "--", marker],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    seen = set()
    lines = []
    deadline = time.monotonic() + 120
    while seen != {0, 1} and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        m = re.match(r"\[rank (\d)\] running (\d) MS_WORKER " + marker, line)
        if m:
            seen.add(int(m.group(1)))
    assert seen == {0, 1}, "".join(lines) + proc.stderr.read() if proc.poll() is not None else lines
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "stopping msrun and its workers" in err
    left = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True)
    assert left.returncode == 1, left.stdout


def test_dry_run_command_from_config(tmp_path):
    script = project(tmp_path, DATA_PARALLEL,
                     cluster={"worker_num": 4, "local_worker_num": 4, "master_addr": "127.0.0.1",
                              "master_port": 9123, "log_dir": "logs/run1",
                              "cluster_time_out": 120})
    r = launch(script, "--dry-run", "--", "--epochs", "2")
    assert r.returncode == 0, r.stderr
    bindir = str(Path(sys.executable).parent)
    cmd = next(line for line in r.stderr.splitlines() if line.startswith("cellscope launch: PATH="))
    assert cmd.startswith(f"cellscope launch: PATH={bindir}:$PATH {bindir}/msrun "), cmd
    assert (f"--worker_num 4 --local_worker_num 4 --master_addr 127.0.0.1 --master_port 9123 "
            f"--node_rank 0 --log_dir {tmp_path}/logs/run1 --join=True --cluster_time_out 120 "
            f"--tail_worker_log=4 {script} --epochs 2") in cmd, cmd
    assert "nothing started" in r.stderr
    assert not (tmp_path / "logs").exists()
    # The command line's options win over the configuration.
    r = launch(script, "--dry-run", "--worker-num", "2", "--local-worker-num", "1",
               "--node-rank", "1", "--master-port", "9200")
    assert r.returncode == 0, r.stderr
    assert "--worker_num 2 --local_worker_num 1 --master_addr 127.0.0.1 --master_port 9200 " \
           "--node_rank 1 " in r.stderr, r.stderr


def test_hostfile_prints_the_other_nodes_commands(tmp_path):
    (tmp_path / "hosts").write_text("# the cluster\n10.1.0.1 slots=2\n10.1.0.2 slots=2  # second\n")
    script = project(tmp_path, DATA_PARALLEL,
                     cluster={"worker_num": None, "hostfile": "hosts", "master_port": 9124})
    r = launch(script, "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "--worker_num 4 --local_worker_num 2 --master_addr 10.1.0.1 --master_port 9124 " \
           "--node_rank 0 " in r.stderr, r.stderr
    assert "node 1 (10.1.0.2, 2 worker(s))" in r.stderr, r.stderr
    assert "msrun --worker_num 4 --local_worker_num 2 --master_addr 10.1.0.1 --master_port 9124 " \
           "--node_rank 1 " in r.stderr, r.stderr
    assert f"cellscope launch --msrun {script} --node-rank 1" in r.stderr, r.stderr


@pytest.mark.parametrize("cluster,message", [
    ({"worker_num": 2, "local_worker_num": 3}, "local_worker_num 3 is larger than worker_num 2"),
    ({"hostfile": [{"host": "a", "slots": 2}, {"host": "b", "slots": 1}]},
     "the hostfile's hosts have different slots"),
    ({"worker_num": 8, "hostfile": [{"host": "a", "slots": 2}]},
     "worker_num is 8 but the hostfile's slots sum to 2"),
])
def test_cluster_contradictions_are_usage_errors(tmp_path, cluster, message):
    script = project(tmp_path, DATA_PARALLEL, cluster=cluster)
    r = launch(script, "--dry-run")
    assert r.returncode == 2, r.stderr
    assert message in r.stderr, r.stderr


def test_bad_cluster_value_is_a_located_config_error(tmp_path):
    script = project(tmp_path, DATA_PARALLEL, cluster={"master_port": 80})
    r = launch(script, "--dry-run")
    assert r.returncode == 1, r.stderr
    assert re.search(r"mindspore_config\.json:1:\d+: error: `master_port` must be an integer from "
                     r"1024 to 65535; got 80 \[invalid-config\]", r.stderr), r.stderr
