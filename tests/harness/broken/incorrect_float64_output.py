"""Broken: right values, wrong dtype: computes and returns float64 for a float32 problem.

The harness must check the output dtype (and not silently cast it before comparing).
"""
# problem: relu
# expect: incorrect

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xd = x.double()
        return torch.where(xd > 0, xd, torch.zeros((), dtype=torch.float64))
