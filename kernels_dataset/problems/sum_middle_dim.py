"""Sum over the middle dimension of a (batch, dim1, dim2) tensor (KernelBench level 1's reduction shape).

Built-in template family: reduce (its column form: the input read in place as [batch, dim1, dim2], each
batch's 256 x 256 slab one sequential stream, the 256 column sums in L1).
Sizes: cpu 16 x 256 x 256; gpu 128 x 4096 x 1024.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=1)


batch, dim1, dim2 = 16, 256, 256
SIZES = {"cpu": {"batch": 16, "dim1": 256, "dim2": 256}, "gpu": {"batch": 128, "dim1": 4096, "dim2": 1024}}


def get_inputs():
    return [torch.randn(batch, dim1, dim2)]


def get_init_inputs():
    return []
