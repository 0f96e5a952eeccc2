"""A problem no test uses: temperature-scaled log-softmax over the last dimension, as in a sampler."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, temperature: float):
        super().__init__()
        self.inv_t = 1.0 / temperature

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(logits * self.inv_t, dim=-1)


batch = 512
vocab = 2048


def get_inputs():
    return [torch.randn(batch, vocab) * 4]


def get_init_inputs():
    return [0.7]
