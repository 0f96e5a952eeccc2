"""Residual add then LayerNorm: layernorm(x + residual), with a learned scale and shift (a post-norm block).

Built-in template family: layernorm with a residual sum. The C++ template adds each row of x and residual
into the output row (in L1) and normalises it there, so the sum never goes to memory (no Triton version yet).
Sizes: cpu 1024 x 1024; gpu 8192 x 8192 (2 x 256 MiB in, 256 MiB out).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.norm(x + residual)


batch_size = 1024
dim = 1024
SIZES = {"cpu": {"batch_size": 1024, "dim": 1024}, "gpu": {"batch_size": 8192, "dim": 8192}}


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
