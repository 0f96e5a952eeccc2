"""Cheat: matmul through torch.einsum('ik,kj->ij').

einsum is a different Python entry point, and at the dispatcher it lowers to aten.bmm (not aten.mm), so
a fallback check that only looks for matmul / mm / addmm misses it. It is still the vendor BLAS doing
the whole multiplication.
"""
# problem: matmul
# expect: rejected torch_fallback

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.einsum("ik,kj->ij", A, B)
