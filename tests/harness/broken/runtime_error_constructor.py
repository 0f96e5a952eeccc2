"""Broken: ModelNew's constructor does not take the problem's init input (dim): TypeError at build time.

get_init_inputs() returns [dim], so ModelNew(dim) fails before any forward() call.
"""
# problem: layernorm
# expect: runtime_error

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(1024)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) * torch.rsqrt(var + 1e-5)
