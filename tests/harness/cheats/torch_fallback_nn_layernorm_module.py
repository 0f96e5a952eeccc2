"""Cheat: the "kernel" is torch's own nn.LayerNorm module, called through a thin wrapper.

The most common fallback of all: ModelNew builds the same nn.LayerNorm as the reference (same RNG draws,
so the same weight and bias) and forward() calls it, via a method fetched with getattr so that no
`self.norm(x)` or `layer_norm(` appears in the source. At the dispatcher it is aten.native_layer_norm,
exactly the reference op.
"""
# problem: layernorm
# expect: rejected torch_fallback

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)
        self._launch = getattr(self.norm, "for" + "ward")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._launch(x.contiguous())
