"""A linear layer, GELU, then softmax over the features: a row operation reading a computed tensor.

Built-in template family: linear, with the GEMM template's row operation (the softmax over each row of C
once the product and its bias + GELU epilogue are done).
Sizes: cpu batch=256, 512 -> 512; gpu batch=4096, 4096 -> 4096.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(F.gelu(self.linear(x)), dim=1)


batch, in_features, out_features = 256, 512, 512
SIZES = {
    "cpu": {"batch": 256, "in_features": 512, "out_features": 512},
    "gpu": {"batch": 4096, "in_features": 4096, "out_features": 4096},
}


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features]
