"""Linear layer then GELU: gelu(x @ W^T + b), nn.Linear followed by F.gelu (an MLP up-projection).

Built-in template family: linear, with bias and GELU fused as its epilogue.
Sizes: cpu tokens=512, 1024 -> 1024 (1.07 GFLOP); gpu tokens=8192, 4096 -> 4096 (275 GFLOP, ~320 MiB).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.fc(x))


tokens, in_features, out_features = 512, 1024, 1024
SIZES = {
    "cpu": {"tokens": 512, "in_features": 1024, "out_features": 1024},
    "gpu": {"tokens": 8192, "in_features": 4096, "out_features": 4096},
}


def get_inputs():
    return [torch.randn(tokens, in_features)]


def get_init_inputs():
    return [in_features, out_features]
