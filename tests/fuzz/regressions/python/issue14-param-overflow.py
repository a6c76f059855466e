import mindspore.nn as nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a = nn.Dense(2**62, 4)
        self.b = nn.Conv2d(2**31, 2**31, 2**16)

    def construct(self, x):
        return self.b(self.a(x))
