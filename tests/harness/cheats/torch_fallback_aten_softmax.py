"""Cheat: call the aten kernel behind torch.softmax directly, torch.ops.aten._softmax.

torch.ops.aten._softmax(x, dim, half_to_float) skips the Python-level torch.softmax entirely, so
patching or wrapping torch.softmax / F.softmax / Tensor.softmax to detect a fallback sees nothing. At
the dispatcher it is the same op the reference runs (aten._softmax.default).
"""
# problem: softmax
# expect: rejected torch_fallback

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten._softmax.default(x.contiguous(), -1, False)
