"""Broken: dereferences a NULL pointer through ctypes in forward(): the process dies with SIGSEGV.

Models a kernel wrapper that passes an unset pointer (0) as its output buffer. No Python exception is
raised; the interpreter is killed by the signal.
"""
# problem: relu
# expect: crashed

import ctypes

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._out_ptr = 0  # "forgot" to allocate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # (indexing a NULL ctypes.POINTER raises ValueError; from_address does no such check)
        ctypes.c_float.from_address(self._out_ptr).value = 1.0  # write through NULL -> SIGSEGV
        return x
