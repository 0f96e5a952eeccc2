"""Attack (fallback through numpy): softmax with np.exp / np.max / np.sum on a zero-copy .numpy() view.

Every arithmetic step runs in numpy's vectorised loops; torch sees only from_numpy at the end.
"""
# problem: softmax
# expect: defeated

import numpy as np
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = x.detach().numpy()
        e = np.exp(a - a.max(axis=-1, keepdims=True))
        e /= e.sum(axis=-1, keepdims=True)
        return torch.from_numpy(e)
