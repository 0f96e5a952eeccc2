"""Cheat: an in-place softmax that returns a VIEW of the input (so `out is x` is False).

The softmax is computed into x's own storage with in-place ops (sub_, exp_, div_), and a fresh view of
x, not x itself, is returned. An identity check (`out is x`) misses it; comparing storages
(out.untyped_storage().data_ptr() against every input's) or checking overlap does not.
"""
# problem: softmax
# expect: rejected aliases_input

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.sub_(x.amax(dim=-1, keepdim=True))
        x.exp_()
        x.div_(x.sum(dim=-1, keepdim=True))
        return x.view(x.shape[0], x.shape[1])
