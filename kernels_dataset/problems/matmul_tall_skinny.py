"""Tall-skinny fp32 matrix multiplication C = A @ B: many rows, a narrow output (M >> K > N).

Built-in template family: matmul. The narrow N leaves few output columns per row, so tiles must be shaped
for it (a square-tuned GEMM wastes most of its register tile).
Sizes: cpu M=8192, K=512, N=64 (0.54 GFLOP); gpu M=131072, K=1024, N=128 (34 GFLOP, A 512 MiB).
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


M, K, N = 8192, 512, 64
SIZES = {"cpu": {"M": 8192, "K": 512, "N": 64}, "gpu": {"M": 131072, "K": 1024, "N": 128}}


def get_inputs():
    return [torch.randn(M, K) / math.sqrt(K), torch.randn(K, N)]


def get_init_inputs():
    return []
