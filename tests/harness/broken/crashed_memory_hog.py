"""Broken: forward() allocates 64 GiB, 1 GiB at a time with torch.ones, and keeps every chunk.

torch.ones writes every page, so resident memory really grows by 1 GiB per step. The harness's memory
limit must stop it long before the machine runs out. How it dies depends on the limit's mechanism: a
cgroup / OOM kill or an RSS watchdog kills it with SIGKILL; an address-space rlimit (RLIMIT_AS) makes
torch.ones raise RuntimeError ("DefaultCPUAllocator: can't allocate memory"), which the harness must
still report as a crash (memory limit), not as an ordinary runtime_error.
"""
# problem: matmul
# expect: crashed

import torch
import torch.nn as nn

_CHUNK_FLOATS = 1 << 28  # 1 GiB of float32
_CHUNKS = 64


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._workspace: list = []

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        for _ in range(_CHUNKS):  # "workspace" for a tiling scheme that never got finished
            self._workspace.append(torch.ones(_CHUNK_FLOATS))
        return torch.zeros(A.shape[0], B.shape[1])
