#!/usr/bin/python3
"""Inference and training-step speed of Cellscope's CPU runtime next to MindSpore 2.10 (graph
mode and PyNative), PyTorch and onnxruntime (inference only), in one run, at 1 and 2 threads
(issue 17):

  python3 bench/speed_compare.py [--bin build/bench/cellscope-run] [--runs 5] [--reps 2]
      [--threads 1,2] [--models lenet5,resnet18,resnet50,bert_base] [--engines ...]
      [--modes infer,train] [--pin]

A training step is forward + backward + nn.Momentum(lr=0.01, momentum=0.9) on the model with a
SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean") loss on its logits (BERT-base: on the
pooled output, 768 "classes"), labels random in [0, 10): MindSpore's TrainOneStepCell(loss cell,
Momentum) with set_train(True); Cellscope `cellscope-run --grad --train-mode --train-step` on the
same loss Cell (the model's source with the loss Cell appended, written to a temporary
directory); PyTorch model.train(), CrossEntropyLoss, SGD(momentum=0.9), zero_grad/backward/step.
The RSS column of the ResNet-50 training rows is the peak RSS of a process doing those steps.

Models: LeNet-5 batch 64, ResNet-18 batch 16 (224x224), ResNet-50 batch 1, BERT-base seq 128.
Cellscope and MindSpore run the same MindSpore source (tests/corpus/models, bench/models);
PyTorch runs torchvision's ResNets and equivalent LeNet-5 / BERT-base modules written here, and
onnxruntime their ONNX export. Same shapes and thread counts, not the same weights (timing only).

Every measurement is a fresh worker process (MindSpore: ~/.cache/cellscope/msvenv; PyTorch and
onnxruntime: ~/.cache/cellscope/torchvenv) that builds the model, runs it twice to warm up and
times `--runs` runs; the engines take turns (`--reps` rounds, engine order rotated each round) so
that they share the machine's load, which is printed with every figure (`uptime`'s 1-minute
average). The table gives each engine's median over all timed runs and its peak RSS (the
worker's, in MiB: interpreter and framework included). Nothing is left in /tmp.

`--pin` runs each worker on as many CPUs as it is given threads (sched_setaffinity before exec):
"one thread" is then one core for every engine. Without it an engine may run more busy threads
than it is asked for (MindSpore's threads_num(1) runs an actor and a kernel thread side by side).

Setup: the MindSpore venv of tests/mindspore (requirements.txt there), and
  python3 -m venv ~/.cache/cellscope/torchvenv
  ~/.cache/cellscope/torchvenv/bin/pip install torch torchvision onnx onnxruntime
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HOME = os.path.expanduser("~")
MS_PY = os.path.join(HOME, ".cache/cellscope/msvenv/bin/python")
TORCH_PY = os.path.join(HOME, ".cache/cellscope/torchvenv/bin/python")

# name: (source file, factory, input shape, input dtype)
MODELS = {
    "lenet5": ("tests/corpus/models/lenet5.py", "LeNet5", (64, 1, 32, 32), "float32"),
    "resnet18": ("bench/models/resnet18.py", "resnet18", (16, 3, 224, 224), "float32"),
    "resnet50": ("tests/corpus/models/resnet50.py", "resnet50", (1, 3, 224, 224), "float32"),
    "bert_base": ("tests/corpus/models/bert_base.py", "bert_base", (1, 128), "int32"),
}
LABELS = {"lenet5": "LeNet-5 b64", "resnet18": "ResNet-18 b16", "resnet50": "ResNet-50 b1",
          "bert_base": "BERT-base s128"}
ENGINES = ["cellscope", "ms_graph", "ms_pynative", "torch", "onnxruntime"]
MODES = ["infer", "train"]

# The loss Cell appended to a model's source for the training step (MindSpore and Cellscope).
LOSS_CELL = """

import mindspore.nn as _bench_nn


class BenchLoss(_bench_nn.Cell):
    def __init__(self):
        super().__init__()
        self.net = {factory}()
        self.loss = _bench_nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def construct(self, x, label):
        return self.loss(self.net(x){pick}, label)
"""


def write_loss_source(model, directory):
    """Writes the model's source plus BenchLoss to DIRECTORY/bench_loss_MODEL.py; its path."""
    src, factory, _, _ = MODELS[model]
    with open(os.path.join(ROOT, src), encoding="utf-8") as f:
        text = f.read()
    pick = "[1]" if model == "bert_base" else ""  # BERT: (sequence, pooled)
    path = os.path.join(directory, f"bench_loss_{model}.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + LOSS_CELL.format(factory=factory, pick=pick))
    return path


# ---- workers (run inside the engine's interpreter) -------------------------------------------------
def _time_runs(fn, runs):
    """Wall ms of each run after two warm-ups, and each run's process CPU ms (every thread: an
    engine's "one thread" setting may still keep several threads busy)."""
    import time
    fn()
    fn()
    wall, cpu = [], []
    for _ in range(runs):
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return {"ms": wall, "cpu": cpu}


def worker_mindspore(model, threads, runs, mode, train=False):
    import importlib
    import numpy as np
    import mindspore as ms
    ms.set_device("CPU")
    ms.device_context.cpu.op_tuning.threads_num(threads)
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    src, factory, shape, dtype = MODELS[model]
    if dtype == "int32":
        x = ms.Tensor(np.random.randint(1, 1000, size=shape).astype(np.int32))
    else:
        x = ms.Tensor(np.random.randn(*shape).astype(np.float32))
    if train:
        # Graph mode reads the Cell's source through its module: a file of its own (cwd is a
        # temporary directory the driver removes).
        path = write_loss_source(model, os.getcwd())
        sys.path.insert(0, os.getcwd())
        mod = importlib.import_module(os.path.splitext(os.path.basename(path))[0])
        loss = mod.BenchLoss()
        opt = ms.nn.Momentum(loss.trainable_params(), learning_rate=0.01, momentum=0.9)
        step = ms.nn.TrainOneStepCell(loss, opt)
        step.set_train(True)
        label = ms.Tensor(np.random.randint(0, 10, size=(shape[0],)).astype(np.int32))
        return _time_runs(lambda: step(x, label).asnumpy(), runs)
    # Graph mode reads the Cell's source through its module: import it by name.
    sys.path.insert(0, os.path.dirname(os.path.join(ROOT, src)))
    mod = importlib.import_module(os.path.splitext(os.path.basename(src))[0])
    net = getattr(mod, factory)()
    net.set_train(False)

    def run():
        y = net(x)
        (y[0] if isinstance(y, tuple) else y).asnumpy()
    return _time_runs(run, runs)


def _torch_model(model):
    import torch
    from torch import nn
    if model == "lenet5":
        return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5),
                             nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120),
                             nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
    if model in ("resnet18", "resnet50"):
        import torchvision
        return getattr(torchvision.models, model)(weights=None)

    class Bert(nn.Module):  # BERT-base: embeddings, 12 post-LN encoder layers, pooler
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding(30522, 768)
            self.pos = nn.Embedding(512, 768)
            self.token_type = nn.Embedding(2, 768)
            self.ln = nn.LayerNorm(768, eps=1e-12)
            layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu",
                                               batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
            self.pool = nn.Linear(768, 768)

        def forward(self, ids):
            pos = torch.arange(ids.shape[1]).unsqueeze(0)
            h = self.ln(self.word(ids) + self.pos(pos) + self.token_type(torch.zeros_like(ids)))
            h = self.encoder(h)
            return h, torch.tanh(self.pool(h[:, 0]))
    return Bert()


def _torch_input(model):
    import torch
    _, _, shape, dtype = MODELS[model]
    if dtype == "int32":
        return torch.randint(1, 1000, shape, dtype=torch.int64)
    return torch.randn(*shape)


def worker_torch(model, threads, runs, train=False):
    import torch
    torch.set_num_threads(threads)
    x = _torch_input(model)
    if train:
        net = _torch_model(model).train()
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()
        label = torch.randint(0, 10, (x.shape[0],))

        def step():
            opt.zero_grad()
            y = net(x)
            loss = loss_fn(y[1] if isinstance(y, tuple) else y, label)
            loss.backward()
            opt.step()
            loss.item()
        return _time_runs(step, runs)
    net = _torch_model(model).eval()

    def run():
        with torch.inference_mode():
            net(x)
    return _time_runs(run, runs)


def worker_onnxruntime(model, threads, runs):
    import numpy as np
    import onnxruntime as ort
    import torch
    torch.backends.mha.set_fastpath_enabled(False)  # the fused encoder op has no ONNX export
    net = _torch_model(model).eval()
    x = _torch_input(model)
    tmp = tempfile.mkdtemp(prefix="cellscope-ort-")
    try:
        path = os.path.join(tmp, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(net, (x,), path, input_names=["x"], dynamo=False)
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    feed = {"x": x.numpy() if x.dtype != torch.int64 else x.numpy().astype(np.int64)}
    return _time_runs(lambda: sess.run(None, feed), runs)


# ---- driver ----------------------------------------------------------------------------------------
def load1():
    return os.getloadavg()[0]


def run_measured(cmd, env=None, cwd=ROOT, cpus=None):
    """Runs cmd; returns its stdout and its own peak RSS in MiB (wait4's rusage of that child).
    cpus: the set of CPUs the child (and every thread it starts) may run on, or None."""
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    with tempfile.TemporaryFile() as err:  # unlinked at once: nothing left in /tmp
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, cwd=cwd, env=env,
                             preexec_fn=pin)
        out = p.stdout.read().decode()
        p.stdout.close()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{tail}")
    return out, usage.ru_maxrss / 1024.0


def measure(engine, model, threads, runs, binary, mode="infer", pin=False):
    src, _, shape, dtype = MODELS[model]
    # --pin: "N threads" means N cores for every engine, whatever threads it starts itself
    # (MindSpore's threads_num(1) still runs an actor and a kernel thread side by side).
    cpus = set(sorted(os.sched_getaffinity(0))[:threads]) if pin else None
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), GLOG_v="3")
    train = mode == "train"
    if engine == "cellscope":
        spec = ",".join(map(str, shape)) + (":int32" if dtype == "int32" else "")
        with tempfile.TemporaryDirectory(prefix="cellscope-bench-") as tmp:
            cmd = [binary, src, "--input-shape", spec, "--threads", str(threads),
                   "--bench", str(max(1, runs // 2))]
            if train:
                cmd[1] = write_loss_source(model, tmp)
                cmd += ["--entry", "BenchLoss()", "--input-shape", f"{shape[0]}:int32",
                        "--grad", "--train-mode", "--train-step"]
            out, rss = run_measured(cmd, env, cpus=cpus)
        j = json.loads(out.strip().splitlines()[-1])
        # --bench N times 2 rounds of N plain runs (and N hooked ones, not used here).
        return {"ms": [j["plain_ms_median"]], "cpu": [j["plain_cpu_ms_median"]]}, rss, \
            j.get("kernels", "")
    py = MS_PY if engine.startswith("ms_") else TORCH_PY
    # MindSpore writes rank_0/ logs into its working directory: a temporary one, removed.
    with tempfile.TemporaryDirectory(prefix="cellscope-bench-") as cwd:
        out, rss = run_measured([py, os.path.abspath(__file__), "--worker", engine, model,
                                 str(threads), str(runs), mode], env, cwd, cpus)
    return json.loads(out.strip().splitlines()[-1]), rss, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/bench/cellscope-run"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--pin", action="store_true",
                    help="run each engine on as many CPUs as it is given threads (affinity)")
    ap.add_argument("--worker", nargs=5, metavar=("ENGINE", "MODEL", "THREADS", "RUNS", "MODE"))
    a = ap.parse_args()
    if a.worker:
        engine, model, threads, runs = a.worker[0], a.worker[1], int(a.worker[2]), int(a.worker[3])
        train = a.worker[4] == "train"
        if engine.startswith("ms_"):
            ms = worker_mindspore(model, threads, runs, engine[3:], train)
        elif engine == "torch":
            ms = worker_torch(model, threads, runs, train)
        else:
            ms = worker_onnxruntime(model, threads, runs)
        print(json.dumps(ms))
        return 0

    engines = a.engines.split(",")
    modes = a.modes.split(",")
    results = {}  # (model, mode, threads, engine) -> {"ms": [...], "rss": max, "load": [...]}
    kernels = ""
    for model in a.models.split(","):
        for mode in modes:
            for threads in map(int, a.threads.split(",")):
                for rep in range(a.reps):
                    order = engines[rep % len(engines):] + engines[:rep % len(engines)]
                    for engine in order:
                        if mode == "train" and engine == "onnxruntime":
                            continue  # inference only
                        before = load1()
                        try:
                            ms, rss, k = measure(engine, model, threads, a.runs, a.bin, mode,
                                                 a.pin)
                        except Exception as e:  # one engine failing does not stop the table
                            print(f"{engine} {model} {mode} t{threads}: {e}", file=sys.stderr)
                            continue
                        kernels = kernels or k
                        r = results.setdefault((model, mode, threads, engine),
                                               {"ms": [], "cpu": [], "rss": 0.0, "load": []})
                        r["ms"] += ms["ms"]
                        r["cpu"] += ms["cpu"]
                        r["rss"] = max(r["rss"], rss)
                        r["load"].append(before)
                        print(f"{model} {mode} t{threads} {engine}: "
                              f"{statistics.median(ms['ms']):.1f} ms, CPU "
                              f"{statistics.median(ms['cpu']):.1f} ms (rss {rss:.0f} MiB, load "
                              f"{before:.1f})", file=sys.stderr, flush=True)

    pinned = "; each engine pinned to as many CPUs as threads" if a.pin else ""
    print(f"Cellscope kernels: {kernels}; {os.cpu_count()} CPUs{pinned}\n")
    head = "| model | step | threads | " + " | ".join(engines) + " | load (1 min) |"
    print(head)
    print("|" + "---|" * (len(engines) + 4))
    for model in a.models.split(","):
        for mode in modes:
            for threads in map(int, a.threads.split(",")):
                cells, loads = [], []
                for engine in engines:
                    r = results.get((model, mode, threads, engine))
                    if not r:
                        cells.append("-" if mode == "train" and engine == "onnxruntime"
                                     else "failed")
                        continue
                    cells.append(f"{statistics.median(r['ms']):.1f} ms (CPU "
                                 f"{statistics.median(r['cpu']):.1f}) / {r['rss']:.0f} MiB")
                    loads += r["load"]
                load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "?"
                what = "inference" if mode == "infer" else "train step"
                print(f"| {LABELS[model]} | {what} | {threads} | " + " | ".join(cells) +
                      f" | {load} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
