import numpy as np
import mindspore as ms
from mindspore import nn


class MLP(nn.Cell):
    def __init__(self, in_features=784, hidden=256, num_class=10):
        super().__init__()
        self.fc1 = nn.Dense(in_features, hidden, activation='relu')
        self.dropout = nn.Dropout(keep_prob=0.8)
        self.fc2 = nn.Dense(hidden, num_class)

    def construct(self, x):
        return self.fc2(self.dropout(self.fc1(x)))


if __name__ == "__main__":
    net = MLP()
    x = ms.Tensor(np.ones((1, 784)), ms.float32)
    print(net(x).shape)
