"""ResNet-50 (bottleneck blocks 3-4-6-3, widths 256..2048, as mindcv's / the model zoo's) on
CIFAR-10-sized images: the network whose int8-vs-fp32 cosine docs/precision.md reports
(`cellscope train ... --drift int8`)."""
import mindspore as ms
import mindspore.dataset as ds
import mindspore.dataset.vision as vision
import mindspore.dataset.transforms as transforms
from mindspore import nn
from mindspore.train import Model, LossMonitor


class Bottleneck(nn.Cell):
    expansion = 4

    def __init__(self, in_ch, ch, stride=1):
        super().__init__()
        out_ch = ch * self.expansion
        self.conv1 = nn.Conv2d(in_ch, ch, 1)
        self.bn1 = nn.BatchNorm2d(ch)
        self.conv2 = nn.Conv2d(ch, ch, 3, stride=stride, pad_mode="pad", padding=1)
        self.bn2 = nn.BatchNorm2d(ch)
        self.conv3 = nn.Conv2d(ch, out_ch, 1)
        self.bn3 = nn.BatchNorm2d(out_ch)
        self.relu = nn.ReLU()
        self.down = None
        if stride != 1 or in_ch != out_ch:
            self.down = nn.SequentialCell(nn.Conv2d(in_ch, out_ch, 1, stride=stride),
                                          nn.BatchNorm2d(out_ch))

    def construct(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.down is not None:
            identity = self.down(x)
        return self.relu(out + identity)


class ResNet50(nn.Cell):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, pad_mode="pad", padding=3)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="same")
        blocks = []
        in_ch = 64
        for ch, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(count):
                blocks.append(Bottleneck(in_ch, ch, stride if i == 0 else 1))
                in_ch = ch * 4
        self.layers = nn.SequentialCell(blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(2048, num_classes)

    def construct(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layers(x)
        return self.fc(self.flatten(self.pool(x)))


def create_dataset(path, batch_size=16):
    data = ds.Cifar10Dataset(path, usage="train", shuffle=True)
    trans = [vision.Rescale(1.0 / 255.0, 0.0),
             vision.Normalize([0.4914, 0.4822, 0.4465], [0.2023, 0.1994, 0.2010]),
             vision.HWC2CHW()]
    data = data.map(operations=trans, input_columns="image")
    data = data.map(operations=transforms.TypeCast(ms.int32), input_columns="label")
    return data.batch(batch_size, drop_remainder=True)


if __name__ == "__main__":
    net = ResNet50()
    dataset = create_dataset("./cifar-10-batches-bin")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(net, loss, opt)
    model.train(1, dataset, callbacks=[LossMonitor(50)])
