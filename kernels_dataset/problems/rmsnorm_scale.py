"""RMSNorm (nn.RMSNorm, learned weight) followed by a constant scale: rmsnorm(x) * scale.

Built-in template family: rmsnorm, with the scale as a one-step epilogue.
Sizes: cpu 1024 x 1024; gpu 8192 x 8192 (256 MiB in, 256 MiB out).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int, scale: float):
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=1e-6)
        self.scale = scale
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x) * self.scale


tokens = 1024
dim = 1024
SIZES = {"cpu": {"tokens": 1024, "dim": 1024}, "gpu": {"tokens": 8192, "dim": 8192}}


def get_inputs():
    return [torch.randn(tokens, dim) * 3]


def get_init_inputs():
    return [dim, 0.7]
