# Found by the python harness (make fuzz, 2026-12-03): int() of a float past int64 was a C++
# cast out of range (UBSan: "1e+30 is outside the range of representable values of type long").
# Python gives a big int; the evaluator gives Unknown.
import mindspore.nn as nn
class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a = int(1e30)
        self.b = int(-1e19)
        self.c = int(9.3e18)
        self.d = int(-9.223372036854775808e18)
        self.fc = nn.Dense(4, 2)
    def construct(self, x):
        return self.fc(x)
