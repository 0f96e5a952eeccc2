"""Broken: a Python syntax error (missing colon after the forward signature).

Importing the file fails with SyntaxError before anything runs. The text `class ModelNew` is still at
top level, so a solution-shape check that only greps for it passes.
"""
# problem: relu
# expect: compile_error

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor
        return torch.where(x > 0, x, torch.zeros((), dtype=x.dtype))
