#!/usr/bin/env python3
"""Deploy round trip and device-side inference speed (issue 20, docs/benchmarks.md).

    python3 bench/deploy_bench.py --bin build/cellscope [--threads 1] [--batches 1,4]
        [--seconds 15] [--min-runs 3] [--deploy-runs 2] [--engines ...] [--no-pin]

One run, ResNet-50 (tests/corpus/models/resnet50.py, `resnet50()`), weights from seed 0:
  1. `cellscope export` writes the .mindir and the .onnx of each batch size from the same
     weights (the same seed: the script checks the engines' outputs agree on the same input).
  2. `cellscope agent` starts on 127.0.0.1 (port 0, a temporary state directory, a random token
     of its own, `--threads N`, `--python` the MindSpore venv's interpreter).
  3. Deploy round trip of the batch-1 MindIR: `cellscope deploy --progress json`, each JSON line
     timestamped as it arrives: start -> `connect` (process start, config), `connect` -> the
     last `upload` event (TLS handshake, fingerprint pinning, 49 chunks of 2 MiB with SHA-256),
     that -> `done` (the device's commit: whole-file hash, rename into a bundle, MindIR import,
     weights bound, the zero-input check, switch), then the first /v1/infer (a real input).
  4. Steady state per batch size: after --warmup runs, runs until --seconds have passed and at
     least --min-runs were made; FPS = samples / wall time, latency p50 / p99 (numpy's linear
     percentile: with few runs p99 is close to the maximum; the runs column says how many).
     Engines:
       agent          POST /v1/infer (cellscope-cpu backend, fp32) over one keep-alive HTTPS
                      connection; the body (the input as JSON numbers) is encoded once before
                      the loop. The row's latency is the client's wall time (TLS, HTTP, JSON
                      parse of the input on the device, the run, JSON of the outputs); the
                      "device ms" column is the agent's own `ms` (the run alone).
       agent-target   the same at --precision target (fp16 between ops, fp32 accumulation)
       agent-int8     the same at --precision int8 (calibration: --cal-samples seeded standard
                      normal inputs, minmax; the quality column is the agent's fp32 vs int8
                      figure on them)
       agent-ms       the agent's mindspore backend (--backend mindspore: mindspore.load +
                      nn.GraphCell in the agent's Python subprocess), batch 1 only
       mindspore      mindspore.load + nn.GraphCell in a process of the MindSpore venv
       onnxruntime    onnxruntime.InferenceSession (CPUExecutionProvider) on the .onnx
     Threads: the agent `--threads N` (ExecOptions::threads: oneDNN's and the runtime's loops);
     MindSpore `ms.device_context.cpu.op_tuning.threads_num(N)`; onnxruntime
     `intra_op_num_threads = N`, `inter_op_num_threads = 1`; OMP_NUM_THREADS=N for all. The
     agent's mindspore subprocess takes MindSpore's default thread count (the agent has no
     setting for it) but, with pinning, only the agent's CPUs. Pinning (default; --no-pin to
     turn it off): the agent and each worker run on N CPUs (sched_setaffinity before exec, so
     every thread an engine starts is confined to them); the HTTP client runs unpinned.
Needs ~/.cache/cellscope/msvenv (MindSpore 2.10) and ~/.cache/cellscope/torchvenv (onnxruntime),
as bench/speed_compare.py does. Prints a markdown table; everything is written in a temporary
directory removed at the end.
"""
from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import platform
import secrets
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
MODEL = REPO / "tests" / "corpus" / "models" / "resnet50.py"
VENVS = Path.home() / ".cache" / "cellscope"
MS_PY = VENVS / "msvenv" / "bin" / "python"
ORT_PY = VENVS / "torchvenv" / "bin" / "python"
ENGINES = ["agent", "agent-target", "agent-int8", "agent-ms", "mindspore", "onnxruntime"]

# Worker for the in-process engines: ENGINE MODEL INPUT.npy OUT.npy THREADS SECONDS MIN_RUNS WARMUP
WORKER = r'''
import json, sys, time
import numpy as np
engine, model, inp, out, threads, seconds, min_runs, warmup = sys.argv[1:9]
threads, seconds, min_runs, warmup = int(threads), float(seconds), int(min_runs), int(warmup)
x = np.load(inp)
t0 = time.perf_counter()
if engine == "mindspore":
    import mindspore as ms
    from mindspore import nn
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_device("CPU")
    ms.device_context.cpu.op_tuning.threads_num(threads)
    cell = nn.GraphCell(ms.load(model))
    xt = ms.Tensor(x)
    run = lambda: cell(xt).asnumpy()
else:
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    run = lambda: sess.run(None, {name: x})[0]
load_s = time.perf_counter() - t0
for _ in range(warmup):
    y = run()
np.save(out, y)
ms_list = []
start = time.perf_counter()
while len(ms_list) < min_runs or time.perf_counter() - start < seconds:
    t = time.perf_counter()
    run()
    ms_list.append((time.perf_counter() - t) * 1e3)
print(json.dumps({"load_s": load_s, "ms": ms_list, "wall_s": time.perf_counter() - start}))
'''


def pin_to(threads):
    cpus = set(sorted(os.sched_getaffinity(0))[:max(threads, 1)])
    return lambda: os.sched_setaffinity(0, cpus)


class AgentClient:
    """One keep-alive HTTPS connection to the agent; the certificate must have the fingerprint
    the agent printed (what `cellscope deploy` pins), the token goes with every request."""

    def __init__(self, port, token, fingerprint):
        self.port, self.token, self.fingerprint = port, token, fingerprint
        self.connect()

    def connect(self):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # self-signed: checked by fingerprint below
        self.conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=ctx, timeout=600)
        self.conn.connect()
        der = self.conn.sock.getpeercert(binary_form=True)
        got = hashlib.sha256(der).hexdigest().upper()
        if got != self.fingerprint.replace(":", "").upper():
            raise SystemExit(f"agent certificate {got} is not the one it printed "
                             f"({self.fingerprint})")

    def call(self, method, path, body=None):
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        headers = {"Authorization": "Bearer " + self.token, "Content-Type": "application/json"}
        try:
            self.conn.request(method, path, body=data, headers=headers)
            r = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionError):
            # The agent closes a connection idle for 30 s (a long deploy in between): once more.
            self.conn.close()
            self.connect()
            self.conn.request(method, path, body=data, headers=headers)
            r = self.conn.getresponse()
        payload = json.loads(r.read())
        if r.status != 200:
            raise SystemExit(f"{method} {path}: HTTP {r.status} {payload}")
        return payload


def start_agent(a, work, token):
    env = dict(os.environ, CELLSCOPE_AGENT_TOKEN=token, OMP_NUM_THREADS=str(a.threads))
    cmd = [a.bin, "agent", "--listen", "127.0.0.1:0", "--state-dir", str(work / "state"),
           "--threads", str(a.threads), "--python", str(MS_PY)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(work / "agent.log", "w"),
                            text=True, env=env, preexec_fn=pin_to(a.threads) if a.pin else None)
    line = proc.stdout.readline()
    if "listening on https://127.0.0.1:" not in line:
        raise SystemExit(f"the agent did not start: {line!r}; see {work / 'agent.log'}")
    port = int(line.split("127.0.0.1:")[1].split(" ")[0])
    fingerprint = line.split("SHA-256 ")[1].rstrip(")\n")
    return proc, port, fingerprint


def deploy(a, work, port, token, model, *extra, name=None):
    """Runs `cellscope deploy --progress json`; the arrival time of each event (s from start)."""
    project = work / "project"
    project.mkdir(exist_ok=True)
    (project / "mindspore_config.json").write_text(json.dumps(
        {"devices": [{"name": "bench", "address": f"127.0.0.1:{port}", "token_env": "BENCH_TK"}]}))
    env = dict(os.environ, BENCH_TK=token, HOME=str(project), XDG_CONFIG_HOME=str(project / "cfg"))
    cmd = [a.bin, "deploy", str(model), "--device", "bench", "--progress", "json", *extra]
    if name:
        cmd += ["--name", name]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=project, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    events = []
    for line in p.stdout:
        events.append((time.perf_counter() - t0, json.loads(line)))
    p.wait()
    last = events[-1][1] if events else {}
    if p.returncode != 0 or last.get("phase") != "done":
        raise SystemExit(f"deploy {model.name} {' '.join(extra)} failed: {last}")
    return events


def round_trip(events, first_infer_s):
    t_connect = next(t for t, e in events if e["phase"] == "connect")
    t_uploaded = [t for t, e in events if e["phase"] == "upload"][-1]
    t_done = events[-1][0]
    return {"start": t_connect, "transfer": t_uploaded - t_connect, "build": t_done - t_uploaded,
            "first_infer": first_infer_s, "total": t_done + first_infer_s}


def infer_body(x, **extra):
    return json.dumps({"inputs": [{"shape": list(x.shape), "data": x.ravel().tolist()}],
                       **extra}).encode()


def measure_agent(client, x, a, backend=None):
    body = infer_body(x, **({"backend": backend} if backend else {}))
    out = None
    for _ in range(a.warmup):
        out = client.call("POST", "/v1/infer", body)
    wall, device = [], []
    start = time.perf_counter()
    while len(wall) < a.min_runs or time.perf_counter() - start < a.seconds:
        t = time.perf_counter()
        r = client.call("POST", "/v1/infer", body)
        wall.append((time.perf_counter() - t) * 1e3)
        device.append(r["ms"])
    o = out["outputs"][0]
    y = np.array(o["data"], dtype=np.float32).reshape(o["shape"])
    return {"ms": wall, "device_ms": device, "wall_s": time.perf_counter() - start, "out": y,
            "body_mb": len(body) / 1e6}


def measure_worker(engine, a, model, x_path, work):
    py = MS_PY if engine == "mindspore" else ORT_PY
    out = work / f"{engine}-{model.stem}.npy"
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), GLOG_v="3")
    r = subprocess.run([str(py), "-c", WORKER, engine, str(model), str(x_path), str(out),
                        str(a.threads), str(a.seconds), str(a.min_runs), str(a.warmup)],
                       capture_output=True, text=True, env=env,
                       preexec_fn=pin_to(a.threads) if a.pin else None)
    if r.returncode != 0:
        raise SystemExit(f"{engine} worker failed:\n{r.stderr[-2000:]}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    res["out"] = np.load(out)
    return res


def wait_for_mindspore(client):
    deadline = time.time() + 180
    while time.time() < deadline:
        b = {x["name"]: x for x in client.call("GET", "/v1/info")["backends"]}["mindspore"]
        if b["available"] is not None:
            return b
        time.sleep(0.5)
    return {"available": False, "reason": "still detecting after 180 s"}


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=str(REPO / "build" / "cellscope"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--seconds", type=float, default=15.0, help="timed seconds per engine")
    ap.add_argument("--min-runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--deploy-runs", type=int, default=2, help="deploy round trips (batch 1)")
    ap.add_argument("--cal-samples", type=int, default=8, help="int8 calibration inputs")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--no-pin", dest="pin", action="store_false")
    a = ap.parse_args()
    a.bin = str(Path(a.bin).resolve())
    engines = a.engines.split(",")
    for e in engines:
        if e not in ENGINES:
            ap.error(f"unknown engine {e}; one of {', '.join(ENGINES)}")
    batches = [int(b) for b in a.batches.split(",")]
    if 1 not in batches:
        batches.insert(0, 1)
    work = Path(tempfile.mkdtemp(prefix="cellscope-deploy-bench-"))
    token = secrets.token_hex(24)
    agent = None
    rows, trips, notes = [], [], []
    try:
        files = {}
        for b in batches:
            for fmt_ in ("mindir", "onnx"):
                f = work / f"resnet50_b{b}.{fmt_}"
                t = time.perf_counter()
                subprocess.run([a.bin, "export", str(MODEL), "--entry", "resnet50()", "--input",
                                f"{b},3,224,224", "--seed", "0", "-o", str(f)], check=True,
                               capture_output=True)
                files[(b, fmt_)] = (f, time.perf_counter() - t)
            x = np.random.default_rng(b).standard_normal((b, 3, 224, 224)).astype(np.float32)
            np.save(work / f"x_b{b}.npy", x)
        agent, port, fingerprint = start_agent(a, work, token)
        print(f"agent on 127.0.0.1:{port}, threads {a.threads}"
              f"{', pinned' if a.pin else ''}", file=sys.stderr)
        client = None
        x1 = np.load(work / "x_b1.npy")
        # Deploy round trips of the batch-1 MindIR (a new name each time: never already_current).
        for k in range(a.deploy_runs):
            events = deploy(a, work, port, token, files[(1, "mindir")][0],
                            name=f"resnet50_trip{k}.mindir")
            if client is None:
                client = AgentClient(port, token, fingerprint)
            t = time.perf_counter()
            client.call("POST", "/v1/infer", infer_body(x1))
            trips.append(round_trip(events, time.perf_counter() - t))
            print(f"round trip {k}: {trips[-1]}", file=sys.stderr)
        results = {}  # (engine, batch) -> result
        for b in batches:
            mindir, onnx = files[(b, "mindir")][0], files[(b, "onnx")][0]
            xb_path = work / f"x_b{b}.npy"
            xb = np.load(xb_path)
            for engine in engines:
                res = None
                if engine == "agent":
                    deploy(a, work, port, token, mindir)
                    res = measure_agent(client, xb, a)
                elif engine == "agent-target":
                    deploy(a, work, port, token, mindir, "--precision", "target")
                    res = measure_agent(client, xb, a)
                    res["quality"] = client.call("GET", "/v1/info")["quality"]
                elif engine == "agent-int8":
                    cal = work / f"cal_b{b}.npy"
                    n = max(a.cal_samples // b, 1) * b
                    np.save(cal, np.random.default_rng(100 + b).standard_normal(
                        (n, 3, 224, 224)).astype(np.float32))
                    deploy(a, work, port, token, mindir, "--precision", "int8",
                           "--calibration-data", str(cal))
                    res = measure_agent(client, xb, a)
                    res["quality"] = client.call("GET", "/v1/info")["quality"]
                elif engine == "agent-ms":
                    if b != 1:
                        continue
                    found = wait_for_mindspore(client)
                    if not found.get("available"):
                        notes.append(f"agent-ms not run: {found}")
                        continue
                    deploy(a, work, port, token, mindir, "--backend", "mindspore")
                    res = measure_agent(client, xb, a)
                else:
                    res = measure_worker(engine, a, onnx if engine == "onnxruntime" else mindir,
                                         xb_path, work)
                results[(engine, b)] = res
                ms = np.array(res["ms"])
                print(f"{engine} b{b}: {len(ms)} runs, p50 {np.percentile(ms, 50):.1f} ms",
                      file=sys.stderr)
        # The same weights: every fp32 engine's output against onnxruntime's on the same input.
        lines = []
        lines.append(f"ResNet-50, {a.threads} thread(s){', pinned' if a.pin else ''}; "
                     f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
                     f"load average {os.getloadavg()[0]:.1f} at the end")
        lines.append("")
        lines.append("Deploy round trip (batch-1 MindIR, "
                     f"{files[(1, 'mindir')][0].stat().st_size / 1e6:.1f} MB; export "
                     f"{files[(1, 'mindir')][1]:.2f} s, not included), seconds:")
        lines.append("")
        lines.append("| run | deploy start | transfer | device build | first inference | total |")
        lines.append("|---|---|---|---|---|---|")
        for k, t in enumerate(trips):
            lines.append(f"| {k + 1} | {t['start']:.2f} | {t['transfer']:.2f} | {t['build']:.2f} "
                         f"| {t['first_infer']:.2f} | {t['total']:.2f} |")
        lines.append("")
        lines.append("| engine | batch | runs | FPS | p50 ms | p99 ms | device ms p50 "
                     "| max abs diff vs onnxruntime | quality vs fp32 |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for (engine, b), res in results.items():
            ms = np.array(res["ms"])
            fps = b * len(ms) / (ms.sum() / 1e3)
            dev = np.percentile(res["device_ms"], 50) if "device_ms" in res else None
            ref = results.get(("onnxruntime", b))
            diff = (float(np.abs(res["out"] - ref["out"]).max())
                    if ref is not None and engine != "onnxruntime" else None)
            q = res.get("quality")
            qual = "-" if not isinstance(q, dict) else (
                f"cosine {q.get('cosine'):.7f} (1 - cos {1 - q.get('cosine'):.1e}), top-1 "
                f"agreement {q.get('top1_agreement')} on {q.get('samples')} samples: "
                f"{q.get('on')}")
            lines.append(f"| {engine} | {b} | {len(ms)} | {fps:.2f} | "
                         f"{np.percentile(ms, 50):.1f} | {np.percentile(ms, 99):.1f} | "
                         f"{fmt(dev)} | {'-' if diff is None else f'{diff:.2e}'} | {qual} |")
        for b in batches:
            if ("agent", b) in results:
                lines.append(f"\nagent request body at batch {b}: "
                             f"{results[('agent', b)]['body_mb']:.1f} MB of JSON")
        for n in notes:
            lines.append(n)
        print("\n".join(lines))
        return 0
    finally:
        if agent is not None:
            agent.terminate()
            try:
                agent.wait(10)
            except subprocess.TimeoutExpired:
                agent.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
