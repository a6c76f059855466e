"""A Transformer encoder block (a Dense input projection, multi-head self-attention written with
Dense, ops.matmul and Softmax, LayerNorm, a GELU feed-forward network, residuals) classifying
sequences, trained in the functional style with nn.AdamWeightDecay (no weight decay on LayerNorm
and biases, through parameter groups), a warmup (nn.WarmUpLR) and gradient clipping. The data is
two .npy files read with np.load and sliced by NumpySlicesDataset (the MindSpore ground-truth
case of transformer_adamw_warmup.py, which builds its data with numpy in the script)."""
import numpy as np
import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn, ops


class EncoderClassifier(nn.Cell):
    def __init__(self, in_features=32, d_model=64, heads=4, d_ff=128, num_classes=4):
        super().__init__()
        self.heads = heads
        self.head_dim = d_model // heads
        self.embed = nn.Dense(in_features, d_model)
        self.query = nn.Dense(d_model, d_model)
        # No bias on the key projection (as in Whisper's attention): softmax over the keys
        # cancels it, so its exact gradient is zero and only rounding noise would train it.
        self.key = nn.Dense(d_model, d_model, has_bias=False)
        self.value = nn.Dense(d_model, d_model)
        self.out = nn.Dense(d_model, d_model)
        self.norm1 = nn.LayerNorm((d_model,))
        self.norm2 = nn.LayerNorm((d_model,))
        self.ff1 = nn.Dense(d_model, d_ff)
        self.ff2 = nn.Dense(d_ff, d_model)
        self.act = nn.GELU()
        self.softmax = nn.Softmax(axis=-1)
        self.classifier = nn.Dense(d_model, num_classes)
        self.scale = 1.0 / (self.head_dim ** 0.5)

    def split_heads(self, x):
        b, l, _ = x.shape
        return x.reshape(b, l, self.heads, self.head_dim).transpose(0, 2, 1, 3)

    def construct(self, x):
        h = self.embed(x)
        b, l, d = h.shape
        q = self.split_heads(self.query(h))
        k = self.split_heads(self.key(h))
        v = self.split_heads(self.value(h))
        scores = ops.matmul(q, k.transpose(0, 1, 3, 2)) * self.scale
        attn = self.softmax(scores)
        ctx = ops.matmul(attn, v).transpose(0, 2, 1, 3).reshape(b, l, d)
        h = self.norm1(h + self.out(ctx))
        h = self.norm2(h + self.ff2(self.act(self.ff1(h))))
        return self.classifier(h.mean(axis=1))


features = np.load("./encoder_data/x.npy")
labels = np.load("./encoder_data/y.npy")
dataset = ds.NumpySlicesDataset((features, labels), column_names=["x", "y"], shuffle=True)
dataset = dataset.batch(16, drop_remainder=True)

net = EncoderClassifier()
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
params = net.trainable_params()
decay_params = [p for p in params if "norm" not in p.name and "bias" not in p.name]
other_params = [p for p in params if "norm" in p.name or "bias" in p.name]
group_params = [{"params": decay_params, "weight_decay": 0.01},
                {"params": other_params, "weight_decay": 0.0},
                {"order_params": params}]
lr = nn.WarmUpLR(learning_rate=2e-3, warmup_steps=8)
optimizer = nn.AdamWeightDecay(group_params, learning_rate=lr, beta1=0.9, beta2=0.98, eps=1e-8)


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
        loss = train_step(x, y)
    print(f"epoch {epoch + 1}: loss {loss.asnumpy():.6f}")
