"""A Transformer encoder block (fused QKV projection, 4-head self-attention with ops.matmul and
Softmax, LayerNorm, a GELU feed-forward network, residuals, mean pooling) trained with
nn.AdamWeightDecay, gradient clipping and a learning-rate schedule the user wrote: a
LearningRateSchedule subclass whose construct computes a linear warmup then a cosine decay with
ops (cast, minimum, cos, a comparison, where). The data is two .npy files read with np.load and
sliced by NumpySlicesDataset. The MindSpore ground-truth case transformer_adamw_warmup
(transformer_encoder_adamw.py is the same training with MindSpore's own nn.WarmUpLR)."""
import math

import numpy as np
import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn, ops
from mindspore.nn.learning_rate_schedule import LearningRateSchedule


class EncoderBlock(nn.Cell):
    def __init__(self, d_model=32, heads=4, d_ff=64, num_classes=4):
        super().__init__()
        self.heads = heads
        # No bias on the fused projection: softmax over the keys cancels the key bias, whose
        # exact gradient is then zero (only rounding noise would train it).
        self.qkv = nn.Dense(d_model, 3 * d_model, has_bias=False)
        self.proj = nn.Dense(d_model, d_model)
        self.norm1 = nn.LayerNorm((d_model,))
        self.norm2 = nn.LayerNorm((d_model,))
        self.ff1 = nn.Dense(d_model, d_ff)
        self.ff2 = nn.Dense(d_ff, d_model)
        self.act = nn.GELU()
        self.softmax = nn.Softmax(axis=-1)
        self.head = nn.Dense(d_model, num_classes)

    def construct(self, x):
        b, l, d = x.shape
        qkv = self.qkv(x).reshape(b, l, 3, self.heads, d // self.heads).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = self.softmax(ops.matmul(q, k.transpose(0, 1, 3, 2)) / (d // self.heads) ** 0.5)
        y = ops.matmul(attn, v).transpose(0, 2, 1, 3).reshape(b, l, d)
        x = self.norm1(x + self.proj(y))
        x = self.norm2(x + self.ff2(self.act(self.ff1(x))))
        return self.head(x.mean(axis=1))


class WarmupCosine(LearningRateSchedule):
    """lr * (step + 1) / warmup_steps during the warmup, then a cosine from lr to min_lr over the
    remaining steps, min_lr after total_steps."""

    def __init__(self, lr, warmup_steps, total_steps, min_lr=0.0):
        super().__init__()
        self.lr = lr
        self.min_lr = min_lr
        self.warmup_steps = warmup_steps
        self.decay_steps = total_steps - warmup_steps

    def construct(self, global_step):
        step = ops.cast(global_step, ms.float32)
        warmup = self.lr * (step + 1.0) / self.warmup_steps
        progress = ops.minimum((step - self.warmup_steps) / self.decay_steps, 1.0)
        cosine = self.min_lr + 0.5 * (self.lr - self.min_lr) * (1.0 + ops.cos(math.pi * progress))
        return ops.where(step < self.warmup_steps, warmup, cosine)


features = np.load("./encoder_data/x.npy")
labels = np.load("./encoder_data/y.npy")
dataset = ds.NumpySlicesDataset((features, labels), column_names=["x", "y"], shuffle=True)
dataset = dataset.batch(16, drop_remainder=True)

net = EncoderBlock()
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
params = net.trainable_params()
decay_params = list(filter(lambda p: "norm" not in p.name and "bias" not in p.name, params))
other_params = list(filter(lambda p: "norm" in p.name or "bias" in p.name, params))
group_params = [{"params": decay_params, "weight_decay": 0.01},
                {"params": other_params, "weight_decay": 0.0},
                {"order_params": params}]
schedule = WarmupCosine(2e-3, 5, 20, min_lr=1e-4)
optimizer = nn.AdamWeightDecay(group_params, learning_rate=schedule, eps=1e-8)


def forward_fn(x, y):
    logits = net(x)
    return loss_fn(logits, y)


grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)


def train_step(x, y):
    loss, grads = grad_fn(x, y)
    grads = ops.clip_by_global_norm(grads, 1.0)
    optimizer(grads)
    return loss


for epoch in range(3):
    net.set_train()
    for x, y in dataset.create_tuple_iterator():
        train_step(x, y)
