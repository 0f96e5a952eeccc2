"""Elementwise GELU, exact (erf) form: x * 0.5 * (1 + erf(x / sqrt(2))).

Built-in template family: elementwise.
Sizes: cpu 1024 x 1024 (1M elements); gpu 8192 x 8192 (64M elements, 256 MiB).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)


batch_size = 1024
dim = 1024
SIZES = {"cpu": {"batch_size": 1024, "dim": 1024}, "gpu": {"batch_size": 8192, "dim": 8192}}


def get_inputs():
    return [torch.randn(batch_size, dim) * 3]


def get_init_inputs():
    return []
