"""Batched fp32 matrix multiplication C[b] = A[b] @ B[b] (torch.bmm).

Built-in template family: bmm (the GEMM template with a batch dimension).
Sizes: cpu batch=16, M=N=K=256 (0.54 GFLOP); gpu batch=64, M=N=K=1024 (137 GFLOP, 3 x 256 MiB).
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
        return torch.bmm(A, B)


batch, M, N, K = 16, 256, 256, 256
SIZES = {"cpu": {"batch": 16, "M": 256, "N": 256, "K": 256}, "gpu": {"batch": 64, "M": 1024, "N": 1024, "K": 1024}}


def get_inputs():
    return [torch.randn(batch, M, K) / math.sqrt(K), torch.randn(batch, K, N)]


def get_init_inputs():
    return []
