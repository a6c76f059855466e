import mindspore.nn as nn


class OpsNet6(nn.Cell):
    "MaxPool2d / AvgPool2d with pad_mode 'pad', padding, ceil_mode, count_include_pad False."

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="same")
        self.mp = nn.MaxPool2d(3, 2, pad_mode="pad", padding=1, ceil_mode=True)
        self.mp2 = nn.MaxPool2d((2, 3), (2, 1), pad_mode="pad", padding=(1, 0))
        self.ap = nn.AvgPool2d(3, 2, pad_mode="pad", padding=1, ceil_mode=True,
                               count_include_pad=False)
        self.ap2 = nn.AvgPool2d(3, 2, pad_mode="pad", padding=(0, 1))
        self.ap3 = nn.AvgPool2d(2, 2, ceil_mode=True)

    def construct(self, x):
        y = self.conv(x)
        return self.mp(y), self.mp2(y), self.ap(y), self.ap2(y), self.ap3(y)
