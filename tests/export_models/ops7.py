import mindspore.nn as nn


class OpsNet7(nn.Cell):
    "AvgPool2d with divisor_override (MindIR only: ONNX's AveragePool has no divisor)."

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="same")
        self.ap = nn.AvgPool2d(2, 2, pad_mode="pad", padding=1, divisor_override=3)
        self.ap2 = nn.AvgPool2d(3, 2, pad_mode="pad", padding=1, ceil_mode=True,
                                count_include_pad=False, divisor_override=5)

    def construct(self, x):
        y = self.conv(x)
        return self.ap(y), self.ap2(y)
