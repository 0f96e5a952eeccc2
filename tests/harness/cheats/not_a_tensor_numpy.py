"""Cheat: return a numpy array instead of a tensor.

The values are right (np.maximum on a zero-copy numpy view of the input), and a harness that does
torch.as_tensor(out) / np.allclose, or compares through out.tolist(), accepts it. But it is not a
tensor: it skips torch's allocator, and breaks any caller that expects a torch.Tensor.
"""
# problem: relu
# expect: rejected not_a_tensor

import numpy as np
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        return np.maximum(x.detach().numpy(), np.float32(0.0))
