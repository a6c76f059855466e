"""A ResNet-18-sized CIFAR-10 model: SGD (nesterov, weight decay) with a cosine schedule,
BatchNorm trained in train mode, parameter groups (no weight decay on BatchNorm and biases)."""
import mindspore as ms
import mindspore.dataset as ds
import mindspore.dataset.vision as vision
import mindspore.dataset.transforms as transforms
from mindspore import nn
from mindspore.train import Model, LossMonitor


class BasicBlock(nn.Cell):
    def __init__(self, in_ch, out_ch, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, stride=stride, pad_mode="pad", padding=1)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, pad_mode="pad", padding=1)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.relu = nn.ReLU()
        self.down = None
        if stride != 1 or in_ch != out_ch:
            self.down = nn.SequentialCell(nn.Conv2d(in_ch, out_ch, 1, stride=stride),
                                          nn.BatchNorm2d(out_ch))

    def construct(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.down is not None:
            identity = self.down(x)
        return self.relu(out + identity)


class ResNet18(nn.Cell):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, pad_mode="pad", padding=1)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        layers = []
        in_ch = 64
        for out_ch, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers.append(BasicBlock(in_ch, out_ch, stride))
            layers.append(BasicBlock(out_ch, out_ch, 1))
            in_ch = out_ch
        self.layers = nn.SequentialCell(layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(512, num_classes)

    def construct(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layers(x)
        return self.fc(self.flatten(self.pool(x)))


def create_dataset(path, batch_size=128):
    data = ds.Cifar10Dataset(path, usage="train", shuffle=True)
    trans = [vision.RandomCrop((32, 32), (4, 4, 4, 4)), vision.RandomHorizontalFlip(prob=0.5),
             vision.Rescale(1.0 / 255.0, 0.0),
             vision.Normalize([0.4914, 0.4822, 0.4465], [0.2023, 0.1994, 0.2010]),
             vision.HWC2CHW()]
    data = data.map(operations=trans, input_columns="image")
    data = data.map(operations=transforms.TypeCast(ms.int32), input_columns="label")
    return data.batch(batch_size, drop_remainder=True)


if __name__ == "__main__":
    epochs = 20
    net = ResNet18()
    dataset = create_dataset("./cifar-10-batches-bin")
    steps = 390
    lr = nn.cosine_decay_lr(min_lr=0.0, max_lr=0.1, total_step=epochs * steps,
                            step_per_epoch=steps, decay_epoch=epochs)
    def no_wd(name):
        return "beta" in name or "gamma" in name or "bias" in name
    decay = [p for p in net.trainable_params() if not no_wd(p.name)]
    no_decay = [p for p in net.trainable_params() if no_wd(p.name)]
    groups = [{"params": decay, "weight_decay": 5e-4}, {"params": no_decay, "weight_decay": 0.0}]
    opt = nn.SGD(groups, learning_rate=lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(net, loss_fn=loss, optimizer=opt, metrics={"acc"})
    model.train(epochs, dataset, callbacks=[LossMonitor(50)], dataset_sink_mode=True, sink_size=100)
