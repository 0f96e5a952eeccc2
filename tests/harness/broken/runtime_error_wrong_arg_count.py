"""Broken: forward() takes one tensor but the matmul problem passes two (A, B): TypeError.
"""
# problem: matmul
# expect: runtime_error

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor) -> torch.Tensor:
        return A
