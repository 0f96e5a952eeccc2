"""Broken: sums each row but keeps the reduced dimension: returns (rows, 1) instead of (rows,).

(Against a (rows,) reference, allclose broadcasts this to (rows, rows) and fails on values.)
"""
# problem: sum_rows
# expect: incorrect

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("ones", torch.ones(1024, 1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mm(x, self.ones[: x.shape[1]])  # (rows, 1)
