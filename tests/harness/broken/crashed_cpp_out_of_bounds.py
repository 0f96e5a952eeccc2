"""Broken: a C++ kernel with a wrong row stride writes far outside its output buffer: SIGSEGV.

The output index uses `r * cols * cols * cols` instead of `r * cols`; from row 1 on every write lands
gigabytes (then petabytes) past the 4 MiB buffer, in unmapped or non-canonical memory.
"""
# problem: softmax
# expect: crashed

import ctypes

import torch
import torch.nn as nn

from agentkern.native import compile_cpp, ptr

_SRC = r"""
#include <cmath>
extern "C" void softmax(const float* x, float* y, long rows, long cols) {
  #pragma omp parallel for
  for (long r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols * cols * cols;   // BUG: wrong stride
    float m = -INFINITY;
    for (long c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
    float s = 0.f;
    for (long c = 0; c < cols; ++c) { yr[c] = std::exp(xr[c] - m); s += yr[c]; }
    for (long c = 0; c < cols; ++c) yr[c] /= s;
  }
}
"""
_LIB = compile_cpp(_SRC, "broken_oob_softmax")
_LIB.softmax.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long, ctypes.c_long]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        _LIB.softmax(ptr(x), ptr(y), x.shape[0], x.shape[1])
        return y
