"""Cheat: a C++ ReLU that runs in place on the input and returns the input tensor itself.

The values are right, and because the harness ran the reference on its own copy of the inputs the
reference never notices that its input was overwritten. Skipping the output allocation (and the
first-touch page faults of a fresh 4 MiB buffer) makes it look faster than torch.relu, but the
"output" is the caller's input: aliasing plus mutation.
"""
# problem: relu
# expect: rejected aliases_input

import ctypes

import torch
import torch.nn as nn

from agentkern.native import compile_cpp, ptr

_SRC = r"""
extern "C" void relu_inplace(float* x, long n) {
  #pragma omp parallel for simd
  for (long i = 0; i < n; ++i) x[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""
_LIB = compile_cpp(_SRC, "ai_relu_inplace")
_LIB.relu_inplace.argtypes = [ctypes.c_void_p, ctypes.c_long]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.is_contiguous()
        _LIB.relu_inplace(ptr(x), x.numel())
        return x
