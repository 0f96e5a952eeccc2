"""Cheat: a softmax that uses its input as scratch space (in-place sub_ and exp_ on x).

The output is a new tensor with the right values, and the harness ran the reference on its own copy of
the inputs, so nothing looks wrong; but the caller's x now holds exp(x - max). Saving the temporary
allocation makes it a bit faster than an honest version. Only comparing the inputs before and after the
call (or running the reference on the very same tensors afterwards) shows it.
"""
# problem: softmax
# expect: rejected mutates_inputs

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.sub_(x.amax(dim=-1, keepdim=True)).exp_()  # scratch: x is overwritten
        return x / x.sum(dim=-1, keepdim=True)  # a new tensor, so no aliasing
