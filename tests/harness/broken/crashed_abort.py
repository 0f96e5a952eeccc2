"""Broken: forward() calls os.abort(): SIGABRT, no Python exception, no cleanup.

Models a native assertion failure (a C++ assert() / std::terminate in a kernel).
"""
# problem: sum_rows
# expect: crashed

import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] % 3 != 0:  # a "kernel precondition" that the problem's shape violates
            os.abort()
        return torch.zeros(x.shape[0])
