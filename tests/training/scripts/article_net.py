"""The product brief's article network (two Conv2d with pad_mode='pad', padding=0, a max pool,
flatten, Dense) with its bug fixed (the Dense takes 9216 features), trained with Model.train."""
import mindspore as ms
import mindspore.dataset as ds
import mindspore.dataset.vision as vision
import mindspore.dataset.transforms as transforms
from mindspore import nn
from mindspore.train import Model, LossMonitor, TimeMonitor


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, pad_mode="pad", padding=0)
        self.conv2 = nn.Conv2d(32, 64, 3, pad_mode="pad", padding=0)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(9216, 10)

    def construct(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.pool(x)
        return self.fc(self.flatten(x))


dataset = ds.MnistDataset("./MNIST_Data/train", usage="train")
dataset = dataset.map([vision.Rescale(1.0 / 255.0, 0.0), vision.HWC2CHW()], input_columns="image")
dataset = dataset.map(transforms.TypeCast(ms.int32), input_columns="label")
dataset = dataset.batch(64, drop_remainder=True)

net = Net()
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
model = Model(net, loss, opt, metrics={"accuracy"})
model.train(5, dataset, callbacks=[LossMonitor(100), TimeMonitor()])
