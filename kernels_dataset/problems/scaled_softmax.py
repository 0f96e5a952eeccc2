"""Scaled softmax softmax(x * scale) over the last dimension, as on attention scores (scale = 1/sqrt(d)).

Built-in template family: softmax (the multiply by a constant folds into its `scale`).
Sizes: cpu 2048 x 512 (rows = batch*heads*queries, cols = keys); gpu 16384 x 4096 (256 MiB in, 256 MiB out).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return torch.softmax(scores * self.scale, dim=-1)


rows = 2048
cols = 512
head_dim = 64
SIZES = {"cpu": {"rows": 2048, "cols": 512}, "gpu": {"rows": 16384, "cols": 4096}}


def get_inputs():
    return [torch.randn(rows, cols) * 8]


def get_init_inputs():
    return [head_dim ** -0.5]
