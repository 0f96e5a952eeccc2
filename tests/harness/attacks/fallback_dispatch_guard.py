"""Attack (torch fallback under dispatch guards): torch.softmax inside torch._C._DisableTorchDispatch()
and torch._C.DisableTorchFunction().

Both guards are C++ RAII objects exposed to Python: the first excludes the Python dispatch keys, so no
TorchDispatchMode (an op recorder) sees the ops run under it; the second turns __torch_function__ modes
and overrides off. Under them it calls the reference's own torch.softmax.
"""
# problem: softmax
# expect: defeated

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch._C._DisableTorchDispatch(), torch._C.DisableTorchFunction():
            return torch.softmax(x, dim=-1)
