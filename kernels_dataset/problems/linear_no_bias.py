"""nn.Linear without bias: y = x @ W^T, for a batch of token vectors (a projection as in attention).

Built-in template family: linear.
Sizes: cpu tokens=512, 1024 -> 1024 (1.07 GFLOP); gpu tokens=8192, 4096 -> 4096 (275 GFLOP, ~320 MiB).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


tokens, in_features, out_features = 512, 1024, 1024
SIZES = {
    "cpu": {"tokens": 512, "in_features": 1024, "out_features": 1024},
    "gpu": {"tokens": 8192, "in_features": 4096, "out_features": 4096},
}


def get_inputs():
    return [torch.randn(tokens, in_features)]


def get_init_inputs():
    return [in_features, out_features]
