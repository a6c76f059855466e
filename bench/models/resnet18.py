"""ResNet-18 (basic blocks), ImageNet layout: the benchmark's ResNet-18 (bench/speed_compare.py)."""
import mindspore.nn as nn
import mindspore.ops as ops


def _conv(cin, cout, k, stride):
    return nn.Conv2d(cin, cout, kernel_size=k, stride=stride, padding=k // 2, pad_mode="pad",
                     has_bias=False)


class BasicBlock(nn.Cell):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = _conv(cin, cout, 3, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = _conv(cout, cout, 3, 1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.SequentialCell([_conv(cin, cout, 1, stride), nn.BatchNorm2d(cout)])

    def construct(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.down is not None:
            identity = self.down(x)
        return self.relu(out + identity)


class ResNet18(nn.Cell):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = _conv(3, 64, 7, 2)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="same")
        layers = []
        cin = 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.SequentialCell([BasicBlock(cin, cout, stride), BasicBlock(cout, cout)]))
            cin = cout
        self.layers = nn.SequentialCell(layers)
        self.mean = ops.ReduceMean(keep_dims=False)
        self.fc = nn.Dense(512, num_classes)

    def construct(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layers(x)
        return self.fc(self.mean(x, (2, 3)))


def resnet18(num_classes: int = 1000) -> ResNet18:
    return ResNet18(num_classes)
