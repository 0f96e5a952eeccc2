"""A softmax kernel that only works at the shape it was written for (tests/harness/test_numerics.py).

The row length is baked into the C++ source (1024, the problem's cpu size), as a kernel tuned on one
input and never run on another often is: every trial at that shape passes. At the harness's second shape
(the problem's size constants changed: batch_size = dim = 513) it normalises 1024-element spans that
straddle rows, and is wrong: reported by default, incorrect with --second-shape require.
"""

import ctypes

import torch
import torch.nn as nn

from agentkern.native import compile_cpp, ptr

_LIB = compile_cpp(r"""
#include <cmath>
extern "C" void softmax(const float* x, float* y, long n) {
    const long D = 1024;  // the shape it was written for
    for (long r = 0; r + D <= n; r += D) {
        float m = x[r];
        for (long i = 1; i < D; ++i) m = x[r + i] > m ? x[r + i] : m;
        float s = 0.0f;
        for (long i = 0; i < D; ++i) { y[r + i] = std::exp(x[r + i] - m); s += y[r + i]; }
        for (long i = 0; i < D; ++i) y[r + i] /= s;
    }
    for (long i = n / D * D; i < n; ++i) y[i] = 0.0f;
}
""")


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _LIB.softmax(ptr(x), ptr(y), ctypes.c_long(x.numel()))
        return y
