"""A CNN block: 3x3 convolution, BatchNorm (inference), ReLU, 2x2 max pooling.

Built-in template family: graph (no one template covers a convolution with a norm, an activation and a pool:
each op is its own C++ kernel, the whole graph one ModelNew).
Sizes: cpu batch=4, 16 -> 32 channels, 32x32; gpu batch=32, 64 -> 128 channels, 112x112.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)


batch, in_channels, out_channels, size = 4, 16, 32, 32
SIZES = {
    "cpu": {"batch": 4, "in_channels": 16, "out_channels": 32, "size": 32},
    "gpu": {"batch": 32, "in_channels": 64, "out_channels": 128, "size": 112},
}


def get_inputs():
    return [torch.randn(batch, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels]
