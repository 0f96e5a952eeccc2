"""Broken: right values, wrong shape: returns (1, rows, cols) instead of (rows, cols).

torch.allclose BROADCASTS, so allclose(out, ref) is True and a naive harness passes it; the harness
must compare shapes explicitly (torch.testing.assert_close does).
"""
# problem: softmax
# expect: incorrect

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return (e / e.sum(dim=-1, keepdim=True)).unsqueeze(0)
