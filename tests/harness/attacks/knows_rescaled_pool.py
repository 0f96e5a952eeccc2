"""Attack (knowing the inputs in advance): answer a rescaled input from a cached answer.

A harness that makes its timed inputs cheaply, as a few draws each multiplied by a per-call factor, hands a
homogeneous op a shortcut: relu(s * x) = s * relu(x). This kernel keeps the first inputs it sees (by a
fingerprint of 8 sampled elements, normalised by the first), and when a later input is a multiple of a
kept one, returns the kept answer times the factor, computing nothing. When the shortcut never fires it
does the work honestly, but slowly (a Python-level loop over chunks), so an attack that got nowhere shows
as a speedup far below 1, and one that worked as a speedup far above it.
"""
# problem: relu
# expect: no-advantage

import ctypes

import torch
import torch.nn as nn

from agentkern.native import compile_cpp, ptr

_LIB = compile_cpp(r"""
extern "C" void relu(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f; }
extern "C" void scale(const float* x, float* y, long n, float s) { for (long i = 0; i < n; ++i) y[i] = x[i] * s; }
extern "C" void sample(const float* x, long n, float* out) { for (int k = 0; k < 8; ++k) out[k] = x[(n / 8) * k + 3]; }
""")
_KEPT = []  # (sample, answer)


def _sample(x):
    buf = (ctypes.c_float * 8)()
    _LIB.sample(ptr(x), ctypes.c_long(x.numel()), buf)
    return list(buf)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        s = _sample(x)
        for kept_sample, answer in _KEPT:
            if kept_sample[0] != 0 and s[0] != 0:
                factor = s[0] / kept_sample[0]
                if factor > 0 and all(abs(a * factor - b) <= 1e-4 * abs(b) + 1e-6 for a, b in zip(kept_sample, s)):
                    _LIB.scale(ptr(answer), ptr(y), ctypes.c_long(x.numel()), ctypes.c_float(factor))
                    return y
        chunk = 4096
        for start in range(0, x.numel(), chunk):  # honest but slow
            n = min(chunk, x.numel() - start)
            _LIB.relu(
                ctypes.c_void_p(x.data_ptr() + 4 * start), ctypes.c_void_p(y.data_ptr() + 4 * start), ctypes.c_long(n)
            )
        if len(_KEPT) < 8:
            _KEPT.append((s, y.clone()))
        return y
