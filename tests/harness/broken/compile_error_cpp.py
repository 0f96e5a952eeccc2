"""Broken: C++ that does not compile (an undeclared variable and a missing semicolon).

compile_cpp() runs at import and raises agentkern.native.CompileError with g++'s diagnostics.
"""
# problem: softmax
# expect: compile_error

import ctypes

import torch
import torch.nn as nn

from agentkern.native import compile_cpp, ptr

_SRC = r"""
#include <cmath>
extern "C" void softmax(const float* x, float* y, long rows, long cols) {
  for (long r = 0; r < rows; ++r) {
    float m = -INFINITY;
    for (long c = 0; c < cols; ++c) m = std::fmax(m, x[r * cols + c]);
    float s = 0.f
    for (long c = 0; c < cols; ++c) { y[r * cols + c] = std::exp(x[r * cols + c] - m); s += y[r * cols + c]; }
    for (long c = 0; c < cols; ++c) y[r * cols + c] /= total;
  }
}
"""
_LIB = compile_cpp(_SRC, "broken_softmax")
_LIB.softmax.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long, ctypes.c_long]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        _LIB.softmax(ptr(x), ptr(y), x.shape[0], x.shape[1])
        return y
