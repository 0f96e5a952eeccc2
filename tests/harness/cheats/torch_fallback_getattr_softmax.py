"""Cheat: call torch.softmax, with the name assembled at run time so a grep finds nothing.

getattr(torch, 'soft' + 'max') is torch.softmax. The "kernel" is the reference op itself. A source scan
for `softmax(` misses it; tracing the aten ops the candidate runs (a TorchDispatchMode, or the profiler)
sees aten._softmax.default.
"""
# problem: softmax
# expect: rejected torch_fallback

import torch
import torch.nn as nn

_OP = getattr(torch, "soft" + "max")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _OP(x, dim=-1)
