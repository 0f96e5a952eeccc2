"""Linear layer (with bias) then SiLU: silu(x @ W^T + b), an MLP up-projection to 4x the width.

Built-in template family: linear, with bias and silu fused as its epilogue.
Sizes: cpu tokens=256, 512 -> 2048 (0.54 GFLOP); gpu tokens=4096, 4096 -> 16384 (550 GFLOP, ~580 MiB).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.fc(x))


tokens, in_features, out_features = 256, 512, 2048
SIZES = {
    "cpu": {"tokens": 256, "in_features": 512, "out_features": 2048},
    "gpu": {"tokens": 4096, "in_features": 4096, "out_features": 16384},
}


def get_inputs():
    return [torch.randn(tokens, in_features)]


def get_init_inputs():
    return [in_features, out_features]
