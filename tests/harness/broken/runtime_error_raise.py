"""Broken: forward() raises (the kernel only supports rows of at most 512 elements).

An ordinary Python exception during the first trial; the harness should report runtime_error with the
exception's message.
"""
# problem: layernorm
# expect: runtime_error

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] > 512:
            raise NotImplementedError(f"layernorm kernel supports dim <= 512, got {x.shape[-1]}")
        return x
