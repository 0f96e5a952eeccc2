"""Attack (torch fallback as another op family): matmul as a 1x1 convolution.

C = A @ B with A (N, K), B (K, M) is conv2d(input = B viewed as (1, K, 1, M), weight = A viewed as
(N, K, 1, 1)) viewed back as (N, M): oneDNN's convolution does the whole multiplication. The reference
calls aten.mm; the candidate calls aten.convolution, another family, and only views otherwise.
"""
# problem: matmul
# expect: defeated

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        n, k = A.shape
        m = B.shape[1]
        out = F.conv2d(B.contiguous().view(1, k, 1, m), A.contiguous().view(n, k, 1, 1))
        return out.view(n, m)
