"""Cheat: memoise a matmul keyed by the inputs' data pointers (and versions), with a spot check.

If A and B sit at the same addresses as on a previous call (same tensors, or new tensors the allocator
put at the recycled addresses) and C[0, 0], C[-1, -1] still equal A[i] . B[:, j], the previous result is
returned as is. The spot check keeps it correct on the random inputs of the correctness trials; on
repeated timing calls with the same inputs the 1024^3 multiply costs nothing. The honest path is a slow
C++ kernel, so the cache is worth a lot.
"""
# problem: matmul
# expect: rejected caches_results

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
_LIB = compile_cpp(_SRC, "cr_ptr_mm")
_LIB.matmul.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]


def _spot_ok(C, A, B) -> bool:
    for i, j in ((0, 0), (-1, -1)):
        want = float((A[i].double() * B[:, j].double()).sum())
        if abs(float(C[i, j]) - want) > 1e-3 * (1 + abs(want)):
            return False
    return True


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._key = None
        self._out = None

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        key = (A.data_ptr(), B.data_ptr(), A._version, B._version, tuple(A.shape), tuple(B.shape))
        if key == self._key and _spot_ok(self._out, A, B):
            return self._out
        A, B = A.contiguous(), B.contiguous()
        C = torch.empty(A.shape[0], B.shape[1], dtype=A.dtype)
        _LIB.matmul(ptr(A), ptr(B), ptr(C), A.shape[0])
        self._key, self._out = key, C
        return C
