"""Matrix-vector product y = A @ x, with x a (K, 1) column (KernelBench level 1's problem 4 is this form).

Built-in template family: matmul (M x K by K x 1). Bandwidth-bound: every element of A is read once for two
FLOPs, so the kernel is judged against the copy bandwidth, not the FMA peak; a GEMM tiled for square
products wastes all but one column of its register tile here.
Sizes: cpu M=4096, K=4096 (A 64 MiB, bigger than the last-level cache); gpu M=16384, K=16384 (A 1 GiB).
A is scaled by 1/sqrt(K): outputs O(1) (see matmul_large_k.py).
"""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, x)


M, K = 4096, 4096
SIZES = {"cpu": {"M": 4096, "K": 4096}, "gpu": {"M": 16384, "K": 16384}}


def get_inputs():
    return [torch.randn(M, K) / math.sqrt(K), torch.randn(K, 1)]


def get_init_inputs():
    return []
