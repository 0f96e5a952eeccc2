"""Row softmax over the last dimension of a 2-D fp32 tensor.

Built-in template family: softmax.
Sizes: cpu 1024 x 1024; gpu 8192 x 8192 (256 MiB in, 256 MiB out).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


batch_size = 1024
dim = 1024
SIZES = {"cpu": {"batch_size": 1024, "dim": 1024}, "gpu": {"batch_size": 8192, "dim": 8192}}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
