"""Elementwise chain x * sigmoid(x) * scale + bias, with a constant scale and a learned per-channel bias.

Built-in template family: elementwise (one fused chain: sigmoid, multiply by x, scale, add a last-dim bias).
Sizes: cpu 1024 x 1024 (1M elements); gpu 8192 x 8192 (64M elements, 256 MiB).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int, scale: float):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(dim) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x) * self.scale + self.bias


batch_size = 1024
dim = 1024
SIZES = {"cpu": {"batch_size": 1024, "dim": 1024}, "gpu": {"batch_size": 8192, "dim": 8192}}


def get_inputs():
    return [torch.randn(batch_size, dim) * 3]


def get_init_inputs():
    return [dim, 1.5]
