"""MobileNetV2 (width multiplier 1.0) written in the MindSpore 2.x model zoo style."""
import numpy as np
import mindspore as ms
from mindspore import nn, ops
from mindspore.common.initializer import Normal, One, Zero, HeNormal

__all__ = ['MobileNetV2', 'mobilenet_v2']


def _make_divisible(v, divisor, min_value=None):
    """Round channels to the nearest multiple of divisor."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    # Make sure that round down does not go down by more than 10%.
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class GlobalAvgPooling(nn.Cell):
    """Global average pooling, (N, C, H, W) -> (N, C)."""

    def __init__(self):
        super(GlobalAvgPooling, self).__init__()

    def construct(self, x):
        x = ops.mean(x, (2, 3), keep_dims=False)
        return x


class ConvBNReLU(nn.Cell):
    """
    Convolution/Depthwise fused with BatchNorm and ReLU6 block definition.

    Args:
        in_planes (int): Input channel.
        out_planes (int): Output channel.
        kernel_size (int): Input kernel size.
        stride (int): Stride size for the first convolutional layer. Default: 1.
        groups (int): channel group. Convolution is 1 while Depthiwse is input channel. Default: 1.
    """

    def __init__(self, in_planes, out_planes, kernel_size=3, stride=1, groups=1):
        super(ConvBNReLU, self).__init__()
        padding = (kernel_size - 1) // 2
        conv = nn.Conv2d(in_planes, out_planes, kernel_size, stride, pad_mode='pad',
                         padding=padding, group=groups)
        layers = [conv, nn.BatchNorm2d(out_planes), nn.ReLU6()]
        self.features = nn.SequentialCell(layers)

    def construct(self, x):
        output = self.features(x)
        return output


class InvertedResidual(nn.Cell):
    """
    Mobilenetv2 residual block definition.

    Args:
        inp (int): Input channel.
        oup (int): Output channel.
        stride (int): Stride size for the first convolutional layer. Default: 1.
        expand_ratio (int): expand ration of input channel.
    """

    def __init__(self, inp, oup, stride, expand_ratio):
        super(InvertedResidual, self).__init__()
        assert stride in [1, 2]

        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup

        layers = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU(inp, hidden_dim, kernel_size=1))
        layers.extend([
            # dw
            ConvBNReLU(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
            # pw-linear
            nn.Conv2d(hidden_dim, oup, kernel_size=1, stride=1, has_bias=False),
            nn.BatchNorm2d(oup),
        ])
        self.conv = nn.SequentialCell(layers)

    def construct(self, x):
        identity = x
        x = self.conv(x)
        if self.use_res_connect:
            return ops.add(identity, x)
        return x


class MobileNetV2(nn.Cell):
    """
    MobileNetV2 architecture.

    Args:
        num_classes (int): number of classes. Default: 1000.
        width_mult (float): Channels multiplier. Default: 1.
        round_nearest (int): Channel round to. Default: 8.
    """

    def __init__(self, num_classes=1000, width_mult=1., round_nearest=8, dropout=0.2):
        super(MobileNetV2, self).__init__()
        block = InvertedResidual
        input_channel = 32
        last_channel = 1280
        # setting of inverted residual blocks
        self.cfgs = [
            # t, c, n, s
            [1, 16, 1, 1],
            [6, 24, 2, 2],
            [6, 32, 3, 2],
            [6, 64, 4, 2],
            [6, 96, 3, 1],
            [6, 160, 3, 2],
            [6, 320, 1, 1],
        ]

        # building first layer
        input_channel = _make_divisible(input_channel * width_mult, round_nearest)
        self.out_channels = _make_divisible(last_channel * max(1.0, width_mult), round_nearest)
        features = [ConvBNReLU(3, input_channel, stride=2)]
        # building inverted residual blocks
        for t, c, n, s in self.cfgs:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                stride = s if i == 0 else 1
                features.append(block(input_channel, output_channel, stride, expand_ratio=t))
                input_channel = output_channel
        # building last several layers
        features.append(ConvBNReLU(input_channel, self.out_channels, kernel_size=1))
        self.features = nn.SequentialCell(features)

        self.pool = GlobalAvgPooling()
        self.dropout = nn.Dropout(p=dropout)
        self.head = nn.Dense(self.out_channels, num_classes, has_bias=True)
        self._initialize_weights()

    def _initialize_weights(self):
        """Initialize weights the way the reference implementation does."""
        self.init_parameters_data()
        for _, m in self.cells_and_names():
            if isinstance(m, nn.Conv2d):
                m.weight.set_data(ms.common.initializer.initializer(
                    HeNormal(mode='fan_out'), m.weight.shape, m.weight.dtype))
                if m.bias is not None:
                    m.bias.set_data(ms.common.initializer.initializer(Zero(), m.bias.shape, m.bias.dtype))
            elif isinstance(m, nn.BatchNorm2d):
                m.gamma.set_data(ms.common.initializer.initializer(One(), m.gamma.shape, m.gamma.dtype))
                m.beta.set_data(ms.common.initializer.initializer(Zero(), m.beta.shape, m.beta.dtype))
            elif isinstance(m, nn.Dense):
                m.weight.set_data(ms.common.initializer.initializer(Normal(0.01), m.weight.shape, m.weight.dtype))
                if m.bias is not None:
                    m.bias.set_data(ms.common.initializer.initializer(Zero(), m.bias.shape, m.bias.dtype))

    def construct(self, x):
        x = self.features(x)
        x = self.pool(x)
        x = self.dropout(x)
        x = self.head(x)
        return x


def mobilenet_v2(num_classes: int = 1000, width_mult: float = 1.0) -> MobileNetV2:
    """MobileNetV2 factory."""
    return MobileNetV2(num_classes=num_classes, width_mult=width_mult)


if __name__ == "__main__":
    net = mobilenet_v2(num_classes=1000)
    net.set_train(False)
    x = ms.Tensor(np.ones((1, 3, 224, 224)), ms.float32)
    out = net(x)
    print(out.shape)
