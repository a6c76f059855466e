"""A small conv net on MNIST-format digits, trained with Model.train: the precision-drift case
(tests/training/check_drift.py). Conv with bias, BatchNorm (eval: moving statistics), ReLU,
max pooling, two Dense layers."""
import mindspore as ms
import mindspore.dataset as ds
import mindspore.dataset.vision as vision
import mindspore.dataset.transforms as transforms
from mindspore import nn
from mindspore.train import Model, LossMonitor


def create_dataset(data_path, batch_size=32):
    mnist_ds = ds.MnistDataset(data_path, usage="train", shuffle=False)
    mnist_ds = mnist_ds.map(operations=transforms.TypeCast(ms.int32), input_columns="label")
    mnist_ds = mnist_ds.map(operations=[vision.Rescale(1.0 / 255.0, 0.0), vision.HWC2CHW()],
                            input_columns="image")
    return mnist_ds.batch(batch_size, drop_remainder=True)


class SmallConvNet(nn.Cell):
    def __init__(self, num_class=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, pad_mode="valid", has_bias=True)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(8 * 13 * 13, 32)
        self.fc2 = nn.Dense(32, num_class)

    def construct(self, x):
        x = self.pool(self.relu(self.bn1(self.conv1(x))))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        return self.fc2(x)


if __name__ == "__main__":
    net = SmallConvNet()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.02, momentum=0.9)
    model = Model(net, loss, opt)
    model.train(1, create_dataset("./MNIST_Data"), callbacks=[LossMonitor(10)],
                dataset_sink_mode=False)
