"""Mean over the last dimension, keeping it: (rows, cols) -> (rows, 1).

Built-in template family: reduce (mean).
Sizes: cpu 4096 x 2048; gpu 16384 x 4096 (256 MiB in).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=-1, keepdim=True)


rows = 4096
cols = 2048
SIZES = {"cpu": {"rows": 4096, "cols": 2048}, "gpu": {"rows": 16384, "cols": 4096}}


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
