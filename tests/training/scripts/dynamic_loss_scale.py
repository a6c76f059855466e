"""Mixed precision with a dynamic loss scale: Model(amp_level='O2', loss_scale_manager=...) and
the same network with TrainOneStepWithLossScaleCell."""
import mindspore as ms
import mindspore.dataset as ds
import mindspore.dataset.vision as vision
import mindspore.dataset.transforms as transforms
from mindspore import nn
from mindspore.train import Model, LossMonitor, DynamicLossScaleManager


class MLP(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(784, 256)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(256, 10)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(self.flatten(x))))


def create_dataset(batch_size=64):
    data = ds.MnistDataset("./MNIST_Data/train")
    data = data.map(vision.Rescale(1 / 255.0, 0.0), input_columns="image")
    data = data.map(vision.HWC2CHW(), input_columns="image")
    data = data.map(transforms.TypeCast(ms.int32), input_columns="label")
    return data.batch(batch_size)


net = MLP()
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
manager = DynamicLossScaleManager(init_loss_scale=2 ** 16, scale_factor=2, scale_window=50)
model = Model(net, loss_fn=loss, optimizer=opt, amp_level="O2", loss_scale_manager=manager)
model.train(2, create_dataset(), callbacks=LossMonitor(), dataset_sink_mode=False)

scale_cell = nn.DynamicLossScaleUpdateCell(loss_scale_value=2 ** 12, scale_factor=2,
                                           scale_window=1000)
step = nn.TrainOneStepWithLossScaleCell(nn.WithLossCell(net, loss), opt, scale_sense=scale_cell)
step.set_train()
for image, label in create_dataset(32).create_tuple_iterator():
    step(image, label)
