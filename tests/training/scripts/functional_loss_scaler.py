"""Dynamic loss scaling in the functional idiom, as MindSpore's mixed-precision tutorial writes it:
amp.DynamicLossScaler scales the loss inside forward_fn, train_step unscales the gradients, steps
the optimizer only when amp.all_finite says they are finite, and adjusts the scale. The initial
scale (2**122: the scaled loss still fits in float32) is so large that the first steps' gradients
overflow: each skips its update and halves the
scale, until the scale fits; then it grows again every `scale_window` finite steps."""
import mindspore
from mindspore import amp, nn
from mindspore.dataset import vision, transforms
from mindspore.dataset import MnistDataset


def datapipe(path, batch_size):
    # Raw pixel values (0-255, not rescaled): gradients large enough to overflow the scale.
    image_transforms = [transforms.TypeCast(mindspore.float32), vision.HWC2CHW()]
    dataset = MnistDataset(path)
    dataset = dataset.map(image_transforms, 'image')
    dataset = dataset.map(transforms.TypeCast(mindspore.int32), 'label')
    return dataset.batch(batch_size)


class Network(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(28 * 28, 64)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(64, 10)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(self.flatten(x))))


train_dataset = datapipe('MNIST_Data/train', batch_size=32)
model = Network()
loss_fn = nn.CrossEntropyLoss()
optimizer = nn.Momentum(model.trainable_params(), learning_rate=0.0005, momentum=0.9)
loss_scaler = amp.DynamicLossScaler(scale_value=2.0 ** 122, scale_factor=2, scale_window=3)


def forward_fn(data, label):
    logits = model(data)
    loss = loss_fn(logits, label)
    loss = loss_scaler.scale(loss)
    return loss, logits


grad_fn = mindspore.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)


def train_step(data, label):
    (loss, _), grads = grad_fn(data, label)
    loss = loss_scaler.unscale(loss)
    is_finite = amp.all_finite(grads)
    if is_finite:
        grads = loss_scaler.unscale(grads)
        optimizer(grads)
    loss_scaler.adjust(is_finite)
    return loss


model.set_train()
for epoch in range(2):
    for data, label in train_dataset.create_tuple_iterator():
        loss = train_step(data, label)
