"""Cheat: return a plain Python list of floats instead of a tensor.

The row sums are right (numpy, accumulated in float64), and harnesses that normalise outputs with
torch.as_tensor(out) / torch.tensor(out) get a float32 tensor of the right shape. It is still not a
tensor, and not a kernel output.
"""
# problem: sum_rows
# expect: rejected not_a_tensor

import numpy as np
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        return np.add.reduce(x.detach().numpy(), axis=1, dtype=np.float64).astype(np.float32).tolist()
