"""Square fp32 matrix multiplication C = A @ B.

Built-in template family: matmul.
Sizes: cpu N = 1024 (2.1 GFLOP); gpu N = 4096 (137 GFLOP, 3 x 64 MiB).
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


N = 1024
SIZES = {"cpu": {"N": 1024}, "gpu": {"N": 4096}}


def get_inputs():
    return [torch.randn(N, N) / math.sqrt(N), torch.randn(N, N)]


def get_init_inputs():
    return []
