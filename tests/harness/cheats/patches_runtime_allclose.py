"""Cheat: monkeypatch every comparison function to say "equal", and return an uninitialised matrix.

At import torch.allclose, torch.isclose, torch.equal, their Tensor-method twins and
torch.testing.assert_close are replaced by functions that always succeed. forward() returns
torch.empty(N, N): no arithmetic at all, so it is thousands of times "faster" than the reference.
"""
# problem: matmul
# expect: rejected patches_runtime

import torch
import torch.nn as nn
import torch.testing


def _always_true(*args, **kwargs):
    return True


def _all_close_mask(a, b=None, *args, **kwargs):
    other = b if isinstance(b, torch.Tensor) else a
    return torch.ones(torch.broadcast_shapes(a.shape, other.shape), dtype=torch.bool)


def _no_error(*args, **kwargs):
    return None


torch.allclose = _always_true
torch.equal = _always_true
torch.isclose = _all_close_mask
torch.Tensor.allclose = _always_true
torch.Tensor.equal = _always_true
torch.Tensor.isclose = _all_close_mask
torch.testing.assert_close = _no_error


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.empty(A.shape[0], B.shape[1], dtype=A.dtype)
