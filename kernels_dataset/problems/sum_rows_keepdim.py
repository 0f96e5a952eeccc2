"""Sum over the last dimension, keeping it: (rows, cols) -> (rows, 1).

Built-in template family: reduce (sum).
Sizes: cpu 2048 x 4096; gpu 4096 x 16384 (256 MiB in).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=-1, keepdim=True)


rows = 2048
cols = 4096
SIZES = {"cpu": {"rows": 2048, "cols": 4096}, "gpu": {"rows": 4096, "cols": 16384}}


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
