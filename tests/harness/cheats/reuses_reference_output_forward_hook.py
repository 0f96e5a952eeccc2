"""Cheat: a global nn.Module forward hook that catches the reference's return value.

torch.nn.modules.module.register_module_forward_hook() registers a hook that runs after EVERY module's
forward in the process, the reference Model's included, and receives its output. The hook keeps the
latest outputs of modules other than ModelNew; forward() returns the reference's own tensor (same
storage) once two entries agree with math.fsum of the rows. No reduction is ever run.
"""
# problem: sum_rows
# expect: rejected reuses_reference_output

import ctypes
import math

import torch
import torch.nn as nn
from torch.nn.modules.module import register_module_forward_hook

from agentkern.native import compile_cpp, ptr

_SRC = r"""
extern "C" void row_sums(const float* x, float* out, long rows, long cols) {
  #pragma omp parallel for
  for (long r = 0; r < rows; ++r) {
    double s = 0.0;
    for (long c = 0; c < cols; ++c) s += x[r * cols + c];
    out[r] = (float)s;
  }
}
"""
_LIB = compile_cpp(_SRC, "ro_hook_sum")
_LIB.row_sums.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long, ctypes.c_long]

_RECENT: list = []


def _hook(module, inputs, output):
    if type(module).__name__ != "ModelNew" and isinstance(output, torch.Tensor):
        _RECENT.append(output)
        del _RECENT[:-4]


_HANDLE = register_module_forward_hook(_hook)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        want0, want1 = math.fsum(x[0].tolist()), math.fsum(x[-1].tolist())
        for y in reversed(_RECENT):
            if tuple(y.shape) == (x.shape[0],) and abs(float(y[0]) - want0) < 1e-3 and abs(float(y[-1]) - want1) < 1e-3:
                return y
        x = x.contiguous()
        out = torch.empty(x.shape[0], dtype=x.dtype)
        _LIB.row_sums(ptr(x), ptr(out), x.shape[0], x.shape[1])
        return out
