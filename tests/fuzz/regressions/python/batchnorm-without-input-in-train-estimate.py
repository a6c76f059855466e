"""DenseNet-121 (growth rate 32, blocks 6/12/24/16) for MindSpore 2.x."""
import math
from collections import OrderedDict

import numpy as np
import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore.common.initializer import initializer, HeNormal, Zero, One

__all__ = ["DenseNet", "densenet121"]


def conv7x7(in_channels, out_channels, stride=1, padding=3, has_bias=False):
    return nn.Conv2d(in_channels, out_channels, kernel_size=7, stride=stride, has_bias=has_bias,
                     padding=padding, pad_mode="pad")


def conv3x3(in_channels, out_channels, stride=1, padding=1, has_bias=False):
    return nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=stride, has_bias=has_bias,
                     padding=padding, pad_mode="pad")


def conv1x1(in_channels, out_channels, stride=1, padding=0, has_bias=False):
                     padding=padding, pad_mode="pad")


class GlobalAvgPooling(nn.Cell):
    """Global average pooling over H and W."""

    def __init__(self):
        super(GlobalAvgPooling, self).__init__()
        self.mean = ops.ReduceMean(keep_dims=True)
        self.shape = ops.Shape()
        self.reshape = ops.Reshape()

    def construct(self, x):
        x = self.mean(x, (2, 3))
        b, c, _, _ = self.shape(x)
        x = self.reshape(x, (b, c))
        return x


class _DenseLayer(nn.Cell):
    """BN-ReLU-Conv1x1-BN-ReLU-Conv3x3, output concatenated to the input."""

    def __init__(self, num_input_features, growth_rate, bn_size, drop_rate):
        super(_DenseLayer, self).__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU()
        self.conv1 = conv1x1(num_input_features, bn_size * growth_rate)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU()
        self.conv2 = conv3x3(bn_size * growth_rate, growth_rate)

        self.drop_rate = drop_rate
        self.dropout = nn.Dropout(p=drop_rate)

    def construct(self, features):
        bottleneck = self.conv1(self.relu1(self.norm1(features)))
        new_features = self.conv2(self.relu2(self.norm2(bottleneck)))
        if self.drop_rate > 0:
            new_features = self.dropout(new_features)
        return ops.concat((features, new_features), axis=1)


class _DenseBlock(nn.Cell):
    """A stack of dense layers; channel count grows by growth_rate per layer."""

    def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate):
        super(_DenseBlock, self).__init__()
        self.cell_list = nn.CellList()
        for i in range(num_layers):
            layer = _DenseLayer(
                num_input_features=num_input_features + i * growth_rate,
                growth_rate=growth_rate,
                bn_size=bn_size,
                drop_rate=drop_rate
            )
            self.cell_list.append(layer)

    def construct(self, init_features):
        features = init_features
        for layer in self.cell_list:
            features = layer(features)
        return features


class _Transition(nn.Cell):
    """BN-ReLU-Conv1x1 followed by 2x2 average pooling."""

    def __init__(self, num_input_features, num_output_features):
        super(_Transition, self).__init__()
        self.features = nn.SequentialCell(OrderedDict([
            ('norm', nn.BatchNorm2d(num_input_features)),
            ('relu', nn.ReLU()),
            ('conv', conv1x1(num_input_features, num_output_features)),
            ('pool', nn.AvgPool2d(kernel_size=2, stride=2))
        ]))

    def construct(self, x):
        x = self.features(x)
        return x


class DenseNet(nn.Cell):
    """
    Densenet-BC model class.

    Args:
        growth_rate (int): how many filters to add each layer (`k` in paper).
        block_config (tuple of 4 ints): how many layers in each pooling block.
        num_init_features (int): the number of filters to learn in the first convolution layer.
        bn_size (int): multiplicative factor for number of bottle neck layers.
        drop_rate (float): dropout rate after each dense layer.
        num_classes (int): number of classification classes.
    """
    __constants__ = ['features']

    def __init__(self, growth_rate=32, block_config=(6, 12, 24, 16), num_init_features=64,
                 bn_size=4, drop_rate=0.0, num_classes=1000):
        super(DenseNet, self).__init__()

        layers = OrderedDict()
        layers['conv0'] = conv7x7(3, num_init_features, stride=2, padding=3)
        layers['norm0'] = nn.BatchNorm2d(num_init_features)
        layers['relu0'] = nn.ReLU()
        layers['pool0'] = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode='same')

        # Each denseblock
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            block = _DenseBlock(
                num_layers=num_layers,
                num_input_features=num_features,
                bn_size=bn_size,
                growth_rate=growth_rate,
                drop_rate=drop_rate
            )
            layers['denseblock%d' % (i + 1)] = block
            num_features = num_features + num_layers * growth_rate
            if i != len(block_config) - 1:
                trans = _Transition(num_features, num_features // 2)
                layers['transition%d' % (i + 1)] = trans
                num_features = num_features // 2

        # Final batch norm
        layers['norm5'] = nn.BatchNorm2d(num_features)
        layers['relu5'] = nn.ReLU()

        self.features = nn.SequentialCell(layers)
        self.out_channels = num_features
        self.pool = GlobalAvgPooling()
        self.classifier = nn.Dense(num_features, num_classes)
        self._initialize_weights()

    def _initialize_weights(self):
        for _, cell in self.cells_and_names():
            if isinstance(cell, nn.Conv2d):
                cell.weight.set_data(initializer(HeNormal(mode='fan_out', nonlinearity='relu'),
                                                 cell.weight.shape, cell.weight.dtype))
            elif isinstance(cell, nn.BatchNorm2d):
                cell.gamma.set_data(initializer(One(), cell.gamma.shape, cell.gamma.dtype))
                cell.beta.set_data(initializer(Zero(), cell.beta.shape, cell.beta.dtype))
            elif isinstance(cell, nn.Dense):
                cell.bias.set_data(initializer(Zero(), cell.bias.shape, cell.bias.dtype))

    def construct(self, x):
        x = self.features(x)
        x = self.pool(x)
        x = self.classifier(x)
        return x


def densenet121(num_classes: int = 1000) -> DenseNet:
    """DenseNet-121."""
    return DenseNet(growth_rate=32, block_config=(6, 12, 24, 16), num_init_features=64,
                    bn_size=4, drop_rate=0.0, num_classes=num_classes)


if __name__ == "__main__":
    net = densenet121()
    net.set_train(False)
    x = ms.Tensor(np.ones((1, 3, 224, 224)), ms.float32)
    ms.export(net, x, file_name="densenet121", file_format="MINDIR")
    out = net(x)
    print(out.shape)
