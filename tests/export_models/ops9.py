import mindspore.nn as nn


class OpsNet9(nn.Cell):
    "Dilated nn.MaxPool2d: an int and an (h, w) dilation, with padding and ceil_mode."

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="same")
        self.mp = nn.MaxPool2d(3, 1, pad_mode="pad", padding=1, dilation=2)
        self.mp2 = nn.MaxPool2d(2, 2, pad_mode="pad", dilation=(2, 3), ceil_mode=True)

    def construct(self, x):
        y = self.conv(x)
        return self.mp(y), self.mp2(y)
