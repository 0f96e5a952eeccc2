"""Attack (fallback to BLAS through numpy): matmul with np.matmul on zero-copy .numpy() views.

A.numpy() and B.numpy() share the tensors' memory; np.matmul runs numpy's BLAS (OpenBLAS); the result
goes back through torch.from_numpy, a plain torch.Tensor. No aten op but from_numpy's is dispatched, so
a dispatcher-level recorder sees nothing.
"""
# problem: matmul
# expect: defeated

import numpy as np
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(np.matmul(A.detach().numpy(), B.detach().numpy()))
