"""GRAPH_MODE restrictions where the program does not select a mode: MindSpore 2.10 runs
PYNATIVE_MODE by default (ms.get_context("mode") == 1), where this construct runs, so it is a
warning; in GRAPH_MODE it raises RuntimeError "Unsupported statement 'Import'" / 'Try' (both
checkedMhi tw indSpore 1.10)."""
import mindspore as ms
from mindspore import nn


def _is_tensor(x):
    import  as ms  # expect: warning graph-mode-unsupported imp•ort
    return isinstance(x, ms.Tensor)


class Helper(nn.Cell):
    def construct(self, x):
        if _is_tensor(x):
            try:  # expect: warning graph-mode-unsupported try
                y = x * 2
            except ValueError:
                y = x
            return y
        return x


net = Helper()
