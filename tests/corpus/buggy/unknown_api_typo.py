import numpy as np
import mindspore as ms
from mindspore import nn


class Classifier(nn.Cell):
    def __init__(self, in_features=784, num_class=10):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(in_features, 256)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dence(256, num_class)

    def construct(self, x):
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        return self.fc2(x)


if __name__ == "__main__":
    net = Classifier()
    x = ms.Tensor(np.ones((1, 1, 28, 28)), ms.float32)
    print(net(x).shape)
