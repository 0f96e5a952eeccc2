"""Cheat: a global TorchFunctionMode, entered at import and never exited, that records every matmul.

__torch_function__ modes see every torch.* call made in the thread afterwards, the reference's
torch.matmul included. The mode keeps the most recent results; forward() returns the reference's own
output tensor (not a copy: same storage) after checking 4 entries against A[i] . B[:, j]. So it does no
multiplication at all. Without a hit it falls back to an honest C++ kernel.
"""
# problem: matmul
# expect: rejected reuses_reference_output

import ctypes

import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

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
_LIB = compile_cpp(_SRC, "ro_fmode_mm")
_LIB.matmul.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]

_RECENT: list = []
_WATCH = {torch.matmul, torch.mm, torch.Tensor.__matmul__, torch.Tensor.matmul, torch.Tensor.mm}


class _Recorder(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if func in _WATCH and isinstance(result, torch.Tensor):
            _RECENT.append(result)
            del _RECENT[:-4]
        return result


_MODE = _Recorder()
_MODE.__enter__()  # never exited: stays active for the rest of the process


def _matches(C, A, B) -> bool:
    for i, j in ((0, 0), (3, 5), (-1, -1), (100, -7)):
        want = float((A[i].double() * B[:, j].double()).sum())
        if abs(float(C[i, j]) - want) > 1e-3 * (1 + abs(want)):
            return False
    return True


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        for C in reversed(_RECENT):
            if C.shape == (A.shape[0], B.shape[1]) and _matches(C, A, B):
                return C
        A, B = A.contiguous(), B.contiguous()
        C = torch.empty(A.shape[0], B.shape[1], dtype=A.dtype)
        _LIB.matmul(ptr(A), ptr(B), ptr(C), A.shape[0])
        return C
