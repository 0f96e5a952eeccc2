"""Cheat: a "blocked reduction" whose blocks are reduced with Tensor.sum, the reference op.

The column range is split into 4 blocks, each block is reduced with `.sum(dim=-1)` and the partial sums
are added: it reads like a hand-made two-level reduction but every addition is done by aten.sum.
"""
# problem: sum_rows
# expect: rejected torch_fallback

import torch
import torch.nn as nn

_BLOCK = 256


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        partial = [x[:, c : c + _BLOCK].sum(dim=-1) for c in range(0, x.shape[-1], _BLOCK)]
        out = partial[0].clone()
        for p in partial[1:]:
            out += p
        return out
