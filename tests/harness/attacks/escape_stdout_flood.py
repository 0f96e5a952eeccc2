"""Attack (escaping the output limits): print 2 GiB to stdout.

At import it writes 2 GiB to file descriptor 1 in 1 MiB chunks (os.write, no Python buffering, errors
ignored so a closed or full pipe does not stop it early). A harness that reads its worker's whole log
into memory, or lets it fill the disk, is hurt; forward() returns zeros (wrong).
"""
# problem: relu
# expect: defeated

import os

import torch
import torch.nn as nn

_CHUNK = (b"agentkern-attack-stdout-flood " * 35000)[: 2**20]


def _flood(total: int = 2 * 2**30) -> None:
    written = 0
    while written < total:
        try:
            written += os.write(1, _CHUNK)
        except OSError:
            written += len(_CHUNK)


_flood()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)
