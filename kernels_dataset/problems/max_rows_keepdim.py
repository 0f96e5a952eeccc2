"""Maximum over short rows, keeping the dimension: x.max(-1, keepdim=True).values, (rows, cols) -> (rows, 1).

Built-in template family: reduce (max).
Sizes: cpu 4096 x 256; gpu 65536 x 1024 (256 MiB in).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.max(dim=-1, keepdim=True).values


rows = 4096
cols = 256
SIZES = {"cpu": {"rows": 4096, "cols": 256}, "gpu": {"rows": 65536, "cols": 1024}}


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
