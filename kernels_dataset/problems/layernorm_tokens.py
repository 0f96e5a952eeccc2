"""LayerNorm (nn.LayerNorm) over the hidden dimension of a (batch, seq, hidden) activation, as in a transformer.

Built-in template family: layernorm (leading dimensions are flattened into rows).
Sizes: cpu batch=8, seq=512, hidden=768; gpu batch=16, seq=2048, hidden=4096 (512 MiB in, 512 MiB out).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-6)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch, seq, hidden = 8, 512, 768
SIZES = {"cpu": {"batch": 8, "seq": 512, "hidden": 768}, "gpu": {"batch": 16, "seq": 2048, "hidden": 4096}}


def get_inputs():
    return [torch.randn(batch, seq, hidden) * 2 + 0.5]


def get_init_inputs():
    return [hidden]
