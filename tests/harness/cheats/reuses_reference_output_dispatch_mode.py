"""Cheat: a global TorchDispatchMode, entered at import, that records every aten.native_layer_norm result.

nn.LayerNorm reaches the aten op native_layer_norm; a dispatch mode sees it below every Python wrapper.
The mode keeps the latest outputs, and forward() returns the reference's own output tensor (same
storage) after recomputing one row honestly to be sure it is the right one. Routing every aten op of
the process through Python also slows the reference down, which inflates the "speedup".
"""
# problem: layernorm
# expect: rejected reuses_reference_output

import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode

_RECENT: list = []


class _Recorder(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if func is torch.ops.aten.native_layer_norm.default:
            _RECENT.append(result[0])
            del _RECENT[:-4]
        return result


_MODE = _Recorder()
_MODE.__enter__()  # never exited


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def _layernorm(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) * torch.rsqrt(var + self.norm.eps) * self.norm.weight + self.norm.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            probe = self._layernorm(x[:1])[0]
            for y in reversed(_RECENT):
                if y.shape == x.shape and torch.allclose(y[0], probe, atol=1e-5, rtol=1e-5):
                    return y
            return self._layernorm(x)
