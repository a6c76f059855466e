"""nn.WithLossCell + nn.TrainOneStepCell over a dict iterator, inside main()."""
import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn
from mindspore.dataset import vision, transforms


def create_dataset(data_path, batch_size=16):
    data = ds.Cifar10Dataset(data_path, usage="train", shuffle=True)
    data = data.map([vision.RandomCrop(32, padding=4), vision.RandomHorizontalFlip(),
                     vision.Rescale(1.0 / 255.0, 0.0), vision.HWC2CHW()], input_columns="image")
    data = data.map(transforms.TypeCast(ms.int32), input_columns="label")
    data = data.shuffle(buffer_size=1000)
    return data.batch(batch_size, drop_remainder=True)


class SmallNet(nn.Cell):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="same")
        self.relu = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(8, num_classes)

    def construct(self, x):
        return self.fc(self.flatten(self.pool(self.relu(self.conv(x)))))


def main():
    net = SmallNet()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Adam(net.trainable_params(), learning_rate=1e-3)
    net_with_loss = nn.WithLossCell(net, loss)
    train_net = nn.TrainOneStepCell(net_with_loss, opt)
    train_net.set_train()
    dataset = create_dataset("./cifar-10-batches-bin")
    for epoch in range(2):
        for data in dataset.create_dict_iterator():
            train_net(data["image"], data["label"])


if __name__ == "__main__":
    main()
