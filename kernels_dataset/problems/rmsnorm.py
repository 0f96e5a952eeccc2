"""RMSNorm (nn.RMSNorm) over the last dimension, with a learned scale: x / sqrt(mean(x^2) + eps) * w.

Built-in template family: rmsnorm.
Sizes: cpu 2048 x 1024; gpu 8192 x 8192 (256 MiB in, 256 MiB out).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=1e-6)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


tokens = 2048
dim = 1024
SIZES = {"cpu": {"tokens": 2048, "dim": 1024}, "gpu": {"tokens": 8192, "dim": 8192}}


def get_inputs():
    return [torch.randn(tokens, dim)]


def get_init_inputs():
    return [dim]
