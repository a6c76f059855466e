"""A Transformer encoder block trained with AdamWeightDecay and a warmup schedule (a
LearningRateSchedule subclass), in the functional style with gradient clipping."""
import numpy as np
import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn, ops
from mindspore.nn.learning_rate_schedule import LearningRateSchedule, WarmUpLR, CosineDecayLR


class EncoderBlock(nn.Cell):
    def __init__(self, d_model=64, heads=4, d_ff=128, num_classes=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Dense(d_model, 3 * d_model)
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
    def __init__(self, lr, warmup_steps, total_steps):
        super().__init__()
        self.warmup = WarmUpLR(lr, warmup_steps)
        self.decay = CosineDecayLR(0.0, lr, total_steps)
        self.warmup_steps = warmup_steps

    def construct(self, global_step):
        if global_step < self.warmup_steps:
            return self.warmup(global_step)
        return self.decay(global_step - self.warmup_steps)


features = np.random.randn(256, 16, 64).astype(np.float32)
labels = np.random.randint(0, 4, (256,)).astype(np.int32)
dataset = ds.NumpySlicesDataset((features, labels), column_names=["x", "y"], shuffle=True)
dataset = dataset.batch(32, drop_remainder=True)

net = EncoderBlock()
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
params = net.trainable_params()
decay_params = list(filter(lambda p: "norm" not in p.name and "bias" not in p.name, params))
other_params = list(filter(lambda p: "norm" in p.name or "bias" in p.name, params))
group_params = [{"params": decay_params, "weight_decay": 0.01},
                {"params": other_params, "weight_decay": 0.0},
                {"order_params": params}]
schedule = WarmupCosine(1e-3, 10, 80)
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


for epoch in range(10):
    net.set_train()
    for x, y in dataset.create_tuple_iterator():
        train_step(x, y)
