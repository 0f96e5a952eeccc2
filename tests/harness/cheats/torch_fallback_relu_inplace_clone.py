"""Cheat: ReLU done by torch.relu_ (the in-place variant) on a copy of the input.

A detector looking for torch.relu / F.relu / aten.relu.default misses it: the dispatcher sees
aten.clone + aten.relu_.default, a different overload of the same reference op. The function object is
also fetched through F.__dict__ so no `relu(` call appears in the source.
"""
# problem: relu
# expect: rejected torch_fallback

import torch
import torch.nn as nn
import torch.nn.functional as F

_RELU_INPLACE = F.__dict__["relu_"]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x.clone()
        _RELU_INPLACE(out)
        return out
