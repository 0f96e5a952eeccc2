"""Broken: importing the file never finishes (sleeps forever at module level).

Models a solution that waits for a resource (a lock file, a GPU, a server) at import time. The harness
must apply its time limit to the import / load phase too, not only to the timed calls.
"""
# problem: sum_rows
# expect: timeout

import time

import torch
import torch.nn as nn

while True:
    time.sleep(3600)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.new_zeros(x.shape[0])
