"""Elementwise leaky ReLU: x if x > 0 else slope * x.

Built-in template family: elementwise.
Sizes: cpu 2048 x 2048 (4M elements); gpu 8192 x 8192 (64M elements, 256 MiB).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 2048
dim = 2048
SIZES = {"cpu": {"batch_size": 2048, "dim": 2048}, "gpu": {"batch_size": 8192, "dim": 8192}}


def get_inputs():
    return [torch.randn(batch_size, dim) * 3]


def get_init_inputs():
    return [0.1]
