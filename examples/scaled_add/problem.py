"""Scaled add: z = x * alpha + y, with alpha fixed when the model is built.

A minimal problem in KernelBench format, written to show the file layout:

* ``Model``: the PyTorch reference. Its constructor arguments come from ``get_init_inputs()``.
* ``get_inputs()``: fresh random inputs for one forward call (the harness seeds torch before calling it).
* ``get_init_inputs()``: the constructor arguments.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * self.alpha + y


size = 1 << 20
alpha = 0.75


def get_inputs():
    return [torch.randn(size), torch.randn(size)]


def get_init_inputs():
    return [alpha]
