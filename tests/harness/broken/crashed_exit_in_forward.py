"""Broken: forward() calls os._exit(3): the process ends at once with exit status 3.

No exception, no traceback, no output: the child that runs the candidate just disappears mid-trial.
The harness must not mistake this for success (nothing was reported) nor hang waiting for a result.
"""
# problem: layernorm
# expect: crashed

import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        os._exit(3)
