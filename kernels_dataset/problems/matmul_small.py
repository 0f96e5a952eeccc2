"""Small square fp32 matrix multiplication C = A @ B, where fixed costs (launch, packing, threading) count.

Built-in template family: matmul.
Sizes: cpu M=N=K=256 (34 MFLOP); gpu M=N=K=1024 (2.1 GFLOP: small for an H100 on purpose, a few
microseconds of math, so launch overhead and tile choice dominate).
A is scaled by 1/sqrt(K): outputs O(1), so fp32 rounding stays well inside the harness's tolerance
(see matmul_large_k.py).
"""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M, N, K = 256, 256, 256
SIZES = {"cpu": {"M": 256, "N": 256, "K": 256}, "gpu": {"M": 1024, "N": 1024, "K": 1024}}


def get_inputs():
    return [torch.randn(M, K) / math.sqrt(K), torch.randn(K, N)]


def get_init_inputs():
    return []
