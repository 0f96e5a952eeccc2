"""RMSNorm written out with elementwise ops and a mean: x / sqrt(mean(x * x, -1) + eps) * weight.

Built-in template family: rmsnorm (the recogniser finds the hand-written pattern and folds the weight).
Sizes: cpu 1024 x 2048; gpu 8192 x 8192 (256 MiB in, 256 MiB out).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ms = (x * x).mean(dim=-1, keepdim=True)
        return x / torch.sqrt(ms + self.eps) * self.weight


tokens = 1024
dim = 2048
SIZES = {"cpu": {"tokens": 1024, "dim": 2048}, "gpu": {"tokens": 8192, "dim": 8192}}


def get_inputs():
    return [torch.randn(tokens, dim)]


def get_init_inputs():
    return [dim]
