"""Runs a training script in real MindSpore 2.10 and records what the ground-truth tier compares.

    ms_reference.py SCRIPT --data DIR --steps N --out OUT [--save-steps]

The script runs as its author wrote it (runpy, __name__ == "__main__"), in PyNative mode (a
GRAPH_MODE request is ignored: the recorder wraps Python methods, which graph mode would compile),
with these hooks on MindSpore's own training entry points:
  * every dataset source reads DIR instead of the path the script names, unshuffled (shuffles
    draw from different random streams; `cellscope train --no-shuffle` reads in file order too);
    np.load(path) reads DIR/<the file's name> when there is such a file;
  * before the first step: the network's parameters are saved to OUT/init.ckpt, and the
    gradient of every trainable parameter on the first batch (ms.value_and_grad of the network
    with its loss) is saved to OUT/grads/<name>.npy; the parameters are then restored from
    init.ckpt (BatchNorm's forward pass in train mode moves its statistics);
  * every step's loss goes to OUT/losses.npy, and training stops after N steps;
  * after the last step: the parameters to OUT/final.ckpt;
  * with --save-steps (Model.train and TrainOneStepCell, whose optimizer the hook sees): after
    every step k, the whole training state to OUT/state/step<k>.ckpt: the network's parameters
    (BatchNorm's moving statistics included) and the optimizer's (global_step, accum.*, stat.*,
    moment1.* ...: the names `cellscope train --checkpoint` restores), so that each step can be
    replayed from MindSpore's own state (compare_training.py's per-step comparison).
The idioms: Model.train (idiom a), ms.value_and_grad + an optimizer called in a loop (b), and
nn.TrainOneStepCell / TrainOneStepWithLossScaleCell (c).
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path

import numpy as np

import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn
from mindspore.train import Callback, Model


class _Stop(Exception):
    """Raised after the last recorded step: ends the script's own loop."""


class Recorder:
    def __init__(self, out: Path, steps: int, save_steps: bool = False):
        self.out = out
        self.steps = steps
        self.save_steps = save_steps
        self.optimizer = None  # the optimizer of Model.train / TrainOneStepCell (--save-steps)
        self.losses: list[float] = []
        self.scale = 1.0  # the loss scale of the last forward_fn call (mindspore.amp)
        self.finite: list[bool] = []  # per step, what DynamicLossScaler.adjust was told
        self.params = None  # the trained parameters (a list of Parameter)
        self.started = False
        self.idiom = None  # the hook that owns the run: Model.train drives a TrainOneStepCell

    def owns(self, idiom: str) -> bool:
        return self.idiom in (None, idiom)

    def start(self, idiom, params, loss_and_grads, network=None):
        """Before the first step: init.ckpt, then the first batch's gradients, then restore.

        With the network known (Model, TrainOneStepCell), the checkpoints hold all of its
        parameters, the state a training forward pass updates (BatchNorm's moving statistics)
        included; the gradient pass moves that state, so it is restored too."""
        if self.started:
            return
        self.started = True
        self.idiom = idiom
        trainable = list(params)
        self.params = trainable
        if network is not None:
            names = {p.name for p in trainable}
            self.params = trainable + [p for p in network.get_parameters()
                                       if p.name not in names]
        init = self.out / "init.ckpt"
        ms.save_checkpoint([{"name": p.name, "data": p} for p in self.params], str(init))
        grads = loss_and_grads()
        (self.out / "grads").mkdir(parents=True, exist_ok=True)
        for p, g in zip(trainable, grads):
            np.save(self.out / "grads" / f"{p.name}.npy", g.asnumpy())
        saved = ms.load_checkpoint(str(init))
        for p in self.params:
            p.set_data(saved[p.name])

    def step(self, loss) -> bool:
        """Records one step's loss; true once the last step ran."""
        self.losses.append(float(np.asarray(loss.asnumpy() if hasattr(loss, "asnumpy") else loss)))
        if self.save_steps and self.optimizer is not None and self.params is not None:
            entries = {p.name: p for p in self.params}
            for p in self.optimizer.get_parameters():
                entries.setdefault(p.name, p)
            (self.out / "state").mkdir(parents=True, exist_ok=True)
            ms.save_checkpoint([{"name": n, "data": p} for n, p in entries.items()],
                               str(self.out / "state" / f"step{len(self.losses)}.ckpt"))
        return len(self.losses) >= self.steps

    def finish(self):
        np.save(self.out / "losses.npy", np.asarray(self.losses, dtype=np.float64))
        if self.finite:
            np.save(self.out / "finite.npy", np.asarray(self.finite, dtype=bool))
        if self.params is not None:
            ms.save_checkpoint([{"name": p.name, "data": p} for p in self.params],
                               str(self.out / "final.ckpt"))


def install(rec: Recorder, data_dir: str):
    # Every dataset source reads the test data.
    for name in ("MnistDataset", "Cifar10Dataset", "ImageFolderDataset"):
        cls = getattr(ds, name)
        orig_init = cls.__init__

        def init(self, dataset_dir, *a, _orig=orig_init, **k):
            k["shuffle"] = False
            _orig(self, data_dir, *a, **k)

        cls.__init__ = init

    # np.load of a data file reads it from DIR by its name (`cellscope train --data DIR` looks
    # for the file there the same way).
    orig_np_load = np.load

    def np_load(file, *a, **k):
        if isinstance(file, (str, os.PathLike)):
            candidate = os.path.join(data_dir, os.path.basename(os.fspath(file)))
            if os.path.isfile(candidate):
                file = candidate
        return orig_np_load(file, *a, **k)

    np.load = np_load

    # The data in file order on both sides (cellscope train --no-shuffle): shuffles draw from
    # different random streams.
    ds.Dataset.shuffle = lambda self, buffer_size: self
    orig_slices_init = ds.NumpySlicesDataset.__init__

    def slices_init(self, data, *a, **k):
        k["shuffle"] = False
        orig_slices_init(self, data, *a, **k)

    ds.NumpySlicesDataset.__init__ = slices_init

    # PyNative: the recorder's wrappers are Python.
    orig_set_context = ms.set_context

    def set_context(**kw):
        kw.pop("mode", None)
        if kw:
            orig_set_context(**kw)

    ms.set_context = set_context
    ms.context.set_context = set_context
    orig_set_context(mode=ms.PYNATIVE_MODE)

    # (a) Model.train
    orig_train = Model.train

    class StepLoss(Callback):
        def step_end(self, run_context):
            if rec.step(run_context.original_args().net_outputs):
                run_context.request_stop()

    def train(self, epoch, train_dataset, callbacks=None, dataset_sink_mode=False, sink_size=-1,
              initial_epoch=0, valid_dataset=None, valid_frequency=1, valid_dataset_sink_mode=True):
        net, loss_fn, opt = self._network, self._loss_fn, self._optimizer
        with_loss = nn.WithLossCell(net, loss_fn) if loss_fn is not None else net
        first = next(train_dataset.create_tuple_iterator())
        grad_fn = ms.value_and_grad(with_loss, None, opt.parameters)
        with_loss.set_train(True)
        rec.optimizer = opt
        rec.start("model", opt.parameters, lambda: grad_fn(*first)[1], with_loss)
        cbs = list(callbacks) if isinstance(callbacks, (list, tuple)) else (
            [callbacks] if callbacks else [])
        orig_train(self, epoch, train_dataset, callbacks=cbs + [StepLoss()],
                   dataset_sink_mode=False)
        raise _Stop()

    Model.train = train

    # (b) ms.value_and_grad(fn, None, weights, has_aux) called in the script's own loop
    orig_vag = ms.value_and_grad

    # mindspore.amp's loss scalers: a forward_fn that scales its loss makes value_and_grad's
    # loss and gradients scaled; the recorder divides them by the scale that call used (a power
    # of two: exact), as Cellscope reports the unscaled ones.
    from mindspore import amp
    for cls in (amp.DynamicLossScaler, amp.StaticLossScaler):
        def scale(self, inputs, _orig=cls.scale):
            rec.scale = float(self.scale_value.asnumpy())
            return _orig(self, inputs)

        cls.scale = scale

    def adjust(self, grads_finite, _orig=amp.DynamicLossScaler.adjust):
        if rec.started and len(rec.finite) < len(rec.losses):
            rec.finite.append(bool(np.asarray(grads_finite.asnumpy())))
        return _orig(self, grads_finite)

    amp.DynamicLossScaler.adjust = adjust

    def value_and_grad(fn, grad_position=None, weights=None, has_aux=False, **kw):
        inner = orig_vag(fn, grad_position, weights, has_aux=has_aux, **kw)

        def unscaled_grads(*args):
            rec.scale = 1.0
            return [g / rec.scale for g in inner(*args)[1]]

        def wrapped(*args):
            if not rec.owns("functional"):
                return inner(*args)
            if not rec.started and weights is not None:
                rec.start("functional", weights, lambda: unscaled_grads(*args))
            if len(rec.losses) >= rec.steps:
                raise _Stop()
            rec.scale = 1.0
            value, grads = inner(*args)
            loss = value[0] if has_aux else value
            rec.step(float(loss.asnumpy()) / rec.scale)
            return value, grads

        return wrapped

    ms.value_and_grad = value_and_grad
    ms.ops.value_and_grad = value_and_grad

    # (c) TrainOneStepCell and its loss-scale variant
    for cls in (nn.TrainOneStepCell, nn.TrainOneStepWithLossScaleCell):
        orig_construct = cls.construct

        def construct(self, *inputs, _orig=orig_construct):
            if not rec.owns("trainonestep"):
                return _orig(self, *inputs)
            if not rec.started:
                grad_fn = orig_vag(self.network, None, self.weights)
                rec.optimizer = self.optimizer
                rec.start("trainonestep", self.weights, lambda: grad_fn(*inputs)[1],
                          self.network)
            if len(rec.losses) >= rec.steps:
                raise _Stop()
            out = _orig(self, *inputs)
            rec.step(out[0] if isinstance(out, tuple) else out)
            return out

        cls.construct = construct


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("script")
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", required=True)
    ap.add_argument("--save-steps", action="store_true",
                    help="the training state after every step: OUT/state/step<k>.ckpt")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    ms.set_seed(1)
    rec = Recorder(out, a.steps, a.save_steps)
    install(rec, os.path.abspath(a.data))
    script = Path(a.script).resolve()
    sys.path.insert(0, str(script.parent))
    try:
        runpy.run_path(str(script), run_name="__main__")
    except _Stop:
        pass
    if not rec.started:
        sys.exit(f"ms_reference.py: {script.name} never reached a training step the recorder "
                 "knows (Model.train, ms.value_and_grad, TrainOneStepCell)")
    rec.finish()
    print(f"ms_reference.py: {script.name}: {len(rec.losses)} steps, last loss "
          f"{rec.losses[-1] if rec.losses else float('nan'):.6g}")


if __name__ == "__main__":
    main()
