"""Broken: forward() never returns (a convergence loop whose exit condition can never hold).

Pure-Python busy loop: it holds the GIL, so a watchdog THREAD inside the same process never gets to run
either; the harness needs an external timeout (parent process) and must kill the child.
"""
# problem: matmul
# expect: timeout

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        residual = 1.0
        while residual > -1.0:  # always true
            residual = residual * 0.5 + 0.5
        return A
