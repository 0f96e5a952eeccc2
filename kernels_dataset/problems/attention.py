"""Attention forward, softmax(q @ k^T / sqrt(d)) @ v per (batch, head), with F.scaled_dot_product_attention.

Built-in template family: attention (flash-attention style on both backends: per tile of query rows the
scores, their row softmax and the product with v stay in registers and cache, never the seq x seq matrix).
Sizes (batch, heads, seq, head_dim): cpu 1, 8, 256, 64; gpu 8, 16, 2048, 128 (q, k, v and out 128 MiB each;
the full score matrix would be 2 GiB).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)


batch, heads, seq, head_dim = 1, 8, 256, 64
SIZES = {
    "cpu": {"batch": 1, "heads": 8, "seq": 256, "head_dim": 64},
    "gpu": {"batch": 8, "heads": 16, "seq": 2048, "head_dim": 128},
}


def get_inputs():
    shape = (batch, heads, seq, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
