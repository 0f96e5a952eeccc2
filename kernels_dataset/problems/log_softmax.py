"""Row log-softmax over the last dimension of a 2-D fp32 tensor: x - max - log(sum(exp(x - max))).

Built-in template family: log_softmax (the softmax templates' log variant).
Sizes: cpu 1024 x 2048; gpu 8192 x 8192 (256 MiB in, 256 MiB out).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.log_softmax(x, dim=-1)


batch_size = 1024
dim = 2048
SIZES = {"cpu": {"batch_size": 1024, "dim": 2048}, "gpu": {"batch_size": 8192, "dim": 8192}}


def get_inputs():
    return [torch.randn(batch_size, dim) * 3]


def get_init_inputs():
    return []
