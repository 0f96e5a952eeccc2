"""Mean over the last dimension: (rows, cols) -> (rows,).

Built-in template family: reduce (mean).
Sizes: cpu 8192 x 1024; gpu 8192 x 8192 (256 MiB in).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=-1)


rows = 8192
cols = 1024
SIZES = {"cpu": {"rows": 8192, "cols": 1024}, "gpu": {"rows": 8192, "cols": 8192}}


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
