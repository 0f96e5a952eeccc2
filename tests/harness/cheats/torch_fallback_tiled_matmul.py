"""Cheat: a "tiled matmul" whose tiles are multiplied with the `@` operator, i.e. torch.matmul / MKL.

It looks like a hand-written blocked kernel (loops over 256x256 tiles, accumulates into the output) but
every tile product is `a_tile @ b_tile`, so all the arithmetic is done by the reference library
(aten.mm.default at the dispatcher). Correct to within tolerance, and about as fast as the reference.
"""
# problem: matmul
# expect: rejected torch_fallback

import torch
import torch.nn as nn

_TILE = 256


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        N = B.shape[1]
        C = torch.zeros(M, N, dtype=A.dtype)
        for i in range(0, M, _TILE):
            for j in range(0, N, _TILE):
                acc = C[i : i + _TILE, j : j + _TILE]
                for k in range(0, K, _TILE):
                    acc += A[i : i + _TILE, k : k + _TILE] @ B[k : k + _TILE, j : j + _TILE]
        return C
