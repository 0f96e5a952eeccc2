"""fp32 matrix multiplication C = A @ B with a long reduction dimension (K >> M, N).

Built-in template family: matmul. Few output tiles and a long K: on a GPU this wants split-K (or
stream-K) to fill the SMs; on a CPU the K blocking matters most.
A is scaled by 1/sqrt(K) so the outputs are O(1): with unit-variance inputs they would be O(sqrt(K)) and the
rounding of any fp32 summation order (torch's own, with another thread count, included) would exceed the
harness's fp32 tolerance (atol=rtol=1e-4) on the outputs near zero. The scaling keeps the check meaningful.
Sizes: cpu M=N=256, K=4096 (0.54 GFLOP); gpu M=N=1024, K=65536 (137 GFLOP, A and B 256 MiB each).
"""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M, N, K = 256, 256, 4096
SIZES = {"cpu": {"M": 256, "N": 256, "K": 4096}, "gpu": {"M": 1024, "N": 1024, "K": 65536}}


def get_inputs():
    return [torch.randn(M, K) / math.sqrt(K), torch.randn(K, N)]


def get_init_inputs():
    return []
