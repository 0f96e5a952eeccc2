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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.double().cumsum(dim=-1)[:, -1:].float()  # BUG: (rows, 1), should be [:, -1]
