"""Maximum over the last dimension with torch.amax: (rows, cols) -> (rows,).

Built-in template family: reduce (amax).
Sizes: cpu 4096 x 2048; gpu 8192 x 8192 (256 MiB in).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amax(x, dim=-1)


rows = 4096
cols = 2048
SIZES = {"cpu": {"rows": 4096, "cols": 2048}, "gpu": {"rows": 8192, "cols": 8192}}


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
