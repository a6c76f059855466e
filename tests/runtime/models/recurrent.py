"""Recurrent layers in inference: nn.LSTM (two layers, bidirectional, batch_first), nn.GRU with
an initial state, nn.RNN with relu and without biases (time-major input)."""
import mindspore.nn as nn
import mindspore.ops as ops


class Recurrent(nn.Cell):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 5, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(6, 4, batch_first=True)
        self.rnn = nn.RNN(6, 3, has_bias=False, nonlinearity="relu")

    def construct(self, x):
        a, (h, c) = self.lstm(x)
        b, hg = self.gru(x, ops.ones((1, 2, 4)) * 0.3)
        d, hr = self.rnn(x.transpose(1, 0, 2))
        return a, h, c, b, hg, d, hr


net = Recurrent()
