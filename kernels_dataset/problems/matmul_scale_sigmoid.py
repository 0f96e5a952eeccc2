"""Matrix multiplication, then a constant scale and a sigmoid: sigmoid((A @ B) * scale).

Built-in template family: matmul, with the scale and sigmoid fused as its epilogue.
Sizes: cpu M=N=K=512 (0.27 GFLOP); gpu M=N=K=4096 (137 GFLOP, 3 x 64 MiB).
A is scaled by 1/sqrt(K): outputs O(1), so fp32 rounding stays well inside the harness's tolerance
(see matmul_large_k.py).
"""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(torch.matmul(A, B) * self.scale)


M, N, K = 512, 512, 512
SIZES = {"cpu": {"M": 512, "N": 512, "K": 512}, "gpu": {"M": 4096, "N": 4096, "K": 4096}}


def get_inputs():
    return [torch.randn(M, K) / math.sqrt(K), torch.randn(K, N)]


def get_init_inputs():
    return [K ** -0.5]
