"""nn.Conv3d: 'pad' with a per-side padding (head, tail, top, bottom, left, right), stride and a
bias; 'same' with dilation and groups; MindSpore's default pad mode ('same')."""
import mindspore.nn as nn


class Conv3d(nn.Cell):
    def __init__(self):
        super().__init__()
        self.pad = nn.Conv3d(4, 6, 3, stride=(1, 2, 2), pad_mode="pad", padding=(1, 0, 1, 1, 2, 1),
                             has_bias=True)
        self.same = nn.Conv3d(4, 4, (2, 3, 3), pad_mode="same", dilation=(1, 2, 1), group=2)
        self.default = nn.Conv3d(4, 3, (1, 2, 3))

    def construct(self, x):
        return self.pad(x), self.same(x), self.default(x)


net = Conv3d()
