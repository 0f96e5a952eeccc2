"""Broken: an off-by-one in the normalisation loop leaves the LAST row unnormalised.

Every row but one is exactly right, so a spot check of the first rows passes; the full comparison fails.
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
        rows = e.shape[0]
        e[: rows - 1] /= e[: rows - 1].sum(dim=-1, keepdim=True)  # BUG: should be e[:rows]
        return e
