"""LeNet-5 on MNIST trained with Model.train (MindSpore's LeNet tutorial structure)."""
import mindspore as ms
import mindspore.dataset as ds
import mindspore.dataset.vision as vision
import mindspore.dataset.transforms as transforms
from mindspore import nn
from mindspore.common.initializer import Normal
from mindspore.train import Model, LossMonitor, TimeMonitor, ModelCheckpoint, CheckpointConfig


def create_dataset(data_path, batch_size=32, repeat_size=1):
    mnist_ds = ds.MnistDataset(data_path, usage="train", shuffle=False)
    resize_op = vision.Resize((32, 32))
    rescale_op = vision.Rescale(1.0 / 255.0, 0.0)
    normalize_op = vision.Rescale(1 / 0.3081, -1 * 0.1307 / 0.3081)
    hwc2chw_op = vision.HWC2CHW()
    type_cast_op = transforms.TypeCast(ms.int32)
    mnist_ds = mnist_ds.map(operations=type_cast_op, input_columns="label")
    mnist_ds = mnist_ds.map(operations=[resize_op, rescale_op, normalize_op, hwc2chw_op],
                            input_columns="image")
    mnist_ds = mnist_ds.batch(batch_size, drop_remainder=True)
    mnist_ds = mnist_ds.repeat(repeat_size)
    return mnist_ds


class LeNet5(nn.Cell):
    def __init__(self, num_class=10, num_channel=1):
        super().__init__()
        self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode="valid", weight_init=Normal(0.02))
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid", weight_init=Normal(0.02))
        self.fc1 = nn.Dense(16 * 5 * 5, 120, weight_init=Normal(0.02))
        self.fc2 = nn.Dense(120, 84, weight_init=Normal(0.02))
        self.fc3 = nn.Dense(84, num_class, weight_init=Normal(0.02))
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()

    def construct(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


if __name__ == "__main__":
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    net = LeNet5()
    net_loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net_opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    config_ck = CheckpointConfig(save_checkpoint_steps=1875, keep_checkpoint_max=10)
    ckpoint = ModelCheckpoint(prefix="checkpoint_lenet", directory="./ckpt", config=config_ck)
    train_ds = create_dataset("./MNIST_Data/train", batch_size=32)
    model = Model(net, net_loss, net_opt, metrics={"Accuracy": nn.Accuracy()})
    model.train(1, train_ds, callbacks=[ckpoint, LossMonitor(125), TimeMonitor()],
                dataset_sink_mode=False)
    ms.export(net, ms.Tensor(ms.numpy.zeros((1, 1, 32, 32)), ms.float32), file_name="lenet",
              file_format="MINDIR")
