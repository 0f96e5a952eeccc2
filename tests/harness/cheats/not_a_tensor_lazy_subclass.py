"""Cheat: return a lazy tensor subclass; the matmul only runs when someone looks at the result.

forward() returns an empty (N, N) tensor of a torch.Tensor subclass that remembers A and B. Its
__torch_function__ materialises the product (honest C++ kernel) the first time ANY torch function
touches it, e.g. the harness's torch.allclose, and then behaves as a plain tensor. So correctness checks
pass, while a timer around forward() measures a few microseconds: the work happens later, outside the
timed region, or never if the timed outputs are discarded unread.
"""
# problem: matmul
# expect: rejected not_a_tensor

import ctypes

import torch
import torch.nn as nn

from agentkern.native import compile_cpp, ptr

_SRC = r"""
#include <vector>
extern "C" void matmul(const float* A, const float* B, float* C, long N) {
  #pragma omp parallel for schedule(static)
  for (long i = 0; i < N; ++i) {
    std::vector<double> acc(N, 0.0);
    for (long k = 0; k < N; ++k) {
      double a = A[i * N + k];
      const float* b = B + k * N;
      for (long j = 0; j < N; ++j) acc[j] += a * b[j];
    }
    for (long j = 0; j < N; ++j) C[i * N + j] = (float)acc[j];
  }
}
"""
_LIB = compile_cpp(_SRC, "nat_lazy_mm")
_LIB.matmul.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]


def _force(value):
    if isinstance(value, _LazyProduct):
        pending = value.__dict__.pop("_pending", None)
        if pending is not None:
            A, B = pending
            _LIB.matmul(ptr(A), ptr(B), ptr(value), A.shape[0])
        return value.as_subclass(torch.Tensor)
    if isinstance(value, (list, tuple)):
        return type(value)(_force(v) for v in value)
    return value


class _LazyProduct(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            args = _force(tuple(args))
            kwargs = {k: _force(v) for k, v in (kwargs or {}).items()}
            return func(*args, **kwargs)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        out = torch.empty(A.shape[0], B.shape[1], dtype=A.dtype).as_subclass(_LazyProduct)
        out.__dict__["_pending"] = (A.contiguous(), B.contiguous())
        return out
