"""Which side of the ResNet-18 comparison is closer to exact arithmetic (docs/training.md, the
ResNet-18 case): a float64 PyTorch model of resnet18_cifar_nesterov.py's network on MindSpore's
weights. A diagnostic tool, not a test (it needs both venvs).

  # MindSpore venv: the weights of CKPT, batch K of the CIFAR data, MindSpore's gradients and
  # every pre-ReLU tensor (in call order) into OUT.npz
  msvenv/bin/python resnet18_float64.py ms CKPT CIFAR_DIR K OUT.npz
  # PyTorch venv: float64 gradients, per parameter compared with MindSpore's and, given the
  # .npy files of `cellscope train --dump-grads DIR` at the same weights and batch, Cellscope's;
  # pre-ReLU values near zero and the sign flips between MindSpore's float32 and float64; the
  # float64 gradient recomputed with MindSpore's ReLU masks
  torchvenv/bin/python resnet18_float64.py f64 OUT.npz [DUMP_DIR]
`cellscope train SCRIPT --data D --checkpoint CKPT --steps 1 --no-shuffle --dump-grads DIR` gives
Cellscope's gradients on D's first batch: rotate the CIFAR binary's records by 8 * K to make
batch K the first (compare_training.py's replay does the same).
"""
import os
import runpy
import sys

import numpy as np

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts",
                      "resnet18_cifar_nesterov.py")
RELUS = 17  # the stem's, two per BasicBlock


def mindspore_side(ckpt, data, k, out):
    import mindspore as ms
    import mindspore.dataset as ds
    import mindspore.dataset.vision as vision
    import mindspore.dataset.transforms as transforms
    from mindspore import nn
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = runpy.run_path(SCRIPT, run_name="resnet18")["ResNet18"](width=16)
    ms.load_param_into_net(net, ms.load_checkpoint(ckpt))
    d = ds.Cifar10Dataset(data, usage="train", shuffle=False)
    d = d.map(operations=[vision.Rescale(1.0 / 255.0, 0.0),
                          vision.Normalize([0.4914, 0.4822, 0.4465], [0.2023, 0.1994, 0.2010]),
                          vision.HWC2CHW()], input_columns="image")
    d = d.map(operations=transforms.TypeCast(ms.int32), input_columns="label")
    it = d.batch(8, drop_remainder=True).create_tuple_iterator()
    for _ in range(k + 1):
        x, y = next(it)
    with_loss = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True,
                                                                      reduction="mean"))
    with_loss.set_train(True)
    params = {p.name: p.asnumpy().copy() for p in net.get_parameters()}
    pre = []
    relu = nn.ReLU.construct

    def recording(self, t):
        pre.append(t.asnumpy().copy())
        return relu(self, t)

    nn.ReLU.construct = recording
    with_loss(x, y)
    nn.ReLU.construct = relu
    for p in net.get_parameters():  # the forward pass moved BatchNorm's statistics
        p.set_data(ms.Tensor(params[p.name]))
    loss, grads = ms.value_and_grad(with_loss, None, net.trainable_params())(x, y)
    res = {"x": x.asnumpy(), "y": y.asnumpy(), "loss": np.float64(loss.asnumpy())}
    res.update({"g:" + p.name: g.asnumpy() for p, g in zip(net.trainable_params(), grads)})
    res.update({"p:" + n: v for n, v in params.items()})
    res.update({f"pre:{i}": v for i, v in enumerate(pre)})
    np.savez(out, **res)


def forward(P, x, y, masks=None, pre_out=None):
    import torch.nn.functional as F
    calls = [0]

    def relu(t):
        i = calls[0]
        calls[0] += 1
        if pre_out is not None:
            pre_out.append(t.detach().clone())
        return t * ((t > 0) if masks is None else masks[i]).to(t.dtype)

    def bn(t, n):  # train mode: the batch's statistics, biased variance, eps 1e-5
        mean = t.mean(dim=(0, 2, 3), keepdim=True)
        var = ((t - mean) ** 2).mean(dim=(0, 2, 3), keepdim=True)
        return ((t - mean) / (var + 1e-5).sqrt() * P[n + ".gamma"].view(1, -1, 1, 1)
                + P[n + ".beta"].view(1, -1, 1, 1))

    def conv(t, n, stride, pad):
        return F.conv2d(t, P[n + ".weight"], None, stride, pad)

    h = relu(bn(conv(x, "conv1", 1, 1), "bn1"))
    for layer, first_stride in zip(range(1, 5), (1, 2, 2, 2)):
        for b in range(2):
            pfx = f"layer{layer}.{b}."
            s = first_stride if b == 0 else 1
            o = bn(conv(relu(bn(conv(h, pfx + "conv1", s, 1), pfx + "bn1")), pfx + "conv2", 1,
                        1), pfx + "bn2")
            if pfx + "down_sample_layer.0.weight" in P:
                h = bn(conv(h, pfx + "down_sample_layer.0", s, 0), pfx + "down_sample_layer.1")
            h = relu(o + h)
    logits = h.mean(dim=(2, 3)) @ P["fc.weight"].T + P["fc.bias"]
    return F.cross_entropy(logits, y)


def gradients(npz, dtype, masks=None, pre_out=None):
    import torch
    P = {k[2:]: torch.tensor(npz[k], dtype=dtype, requires_grad=True) for k in npz.files
         if k.startswith("p:") and "moving" not in k}
    loss = forward(P, torch.tensor(npz["x"], dtype=dtype),
                   torch.tensor(npz["y"].astype(np.int64)), masks, pre_out)
    loss.backward()
    return float(loss.detach()), {k: v.grad.numpy().astype(np.float64) for k, v in P.items()}


def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))


def float64_side(path, dump=None):
    import torch
    npz = np.load(path)
    pre = []
    loss64, g64 = gradients(npz, torch.float64, pre_out=pre)
    _, g_msmask = gradients(npz, torch.float64,
                            masks=[torch.tensor(npz[f"pre:{i}"] > 0) for i in range(RELUS)])
    print(f"loss float64 {loss64:.9f}, MindSpore {float(npz['loss']):.9f}")
    for i in range(RELUS):
        p64, p32 = pre[i].numpy(), npz[f"pre:{i}"]
        print(f"relu {i:2d}: {p64.size} values, {int(np.sum(np.abs(p64) < 1e-5))} with |x| < 1e-5 "
              f"(min {np.min(np.abs(p64)):.2e}), signs MindSpore != float64: "
              f"{int(np.sum((p64 > 0) != (p32 > 0)))}")
    cs = {}
    if dump:
        cs = {f[:-4]: np.load(os.path.join(dump, f)) for f in os.listdir(dump)
              if f.endswith(".npy")}
    print(f"{'parameter':38s} {'MS~f64':>9s} {'CS~f64':>9s} {'MS~f64(MS masks)':>17s}")
    for k in g64:
        c = f"{rel(cs[k], g64[k]):9.2e}" if k in cs else f"{'-':>9s}"
        print(f"{k:38s} {rel(npz['g:' + k], g64[k]):9.2e} {c} "
              f"{rel(npz['g:' + k], g_msmask[k]):17.2e}")


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "ms":
        mindspore_side(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif len(sys.argv) in (3, 4) and sys.argv[1] == "f64":
        float64_side(sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else None)
    else:
        sys.exit(__doc__)
