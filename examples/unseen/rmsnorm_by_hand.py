"""A problem no test uses: RMSNorm written out by hand (as in LLaMA), with a learned scale."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * rms * self.weight


tokens = 2048
dim = 1024


def get_inputs():
    return [torch.randn(tokens, dim)]


def get_init_inputs():
    return [dim]
