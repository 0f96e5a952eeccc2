"""bf16 matrix multiplication C = A @ B (bfloat16 inputs and output, as on tensor cores).

Built-in template family: matmul. On a CPU the C++ GEMM widens the bf16 operands to fp32 while it packs
them and rounds the result once (no Triton fp16/bf16 template yet). torch's CPU bf16 GEMM can be slow, hence the small cpu size.
Sizes: cpu M=N=K=128; gpu M=N=K=8192 (1.1 TFLOP, 3 x 128 MiB).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M, N, K = 128, 128, 128
SIZES = {"cpu": {"M": 128, "N": 128, "K": 128}, "gpu": {"M": 8192, "N": 8192, "K": 8192}}


def get_inputs():
    return [torch.randn(M, K, dtype=torch.bfloat16), torch.randn(K, N, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
