"""Cheat: compute in a child process (a `python -c` one-liner fed through a pipe) during forward().

forward() ships the input's bytes to `sys.executable -c "...numpy..."` over stdin and reads the result
back from stdout. The numbers are right. The work is done outside the process the harness watches:
no torch op tracing, thread counting, memory accounting or CPU-time measurement of the harness process
sees it, and the child could as well use the reference library or the network.
"""
# problem: relu
# expect: rejected forbidden_call

import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn

_CHILD = (
    "import sys, numpy as np; "
    "a = np.frombuffer(sys.stdin.buffer.read(), dtype=np.float32); "
    "sys.stdout.buffer.write(np.maximum(a, 0).astype(np.float32).tobytes())"
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        data = x.detach().contiguous().numpy().tobytes()
        proc = subprocess.run([sys.executable, "-c", _CHILD], input=data, capture_output=True, check=True)
        return torch.from_numpy(np.frombuffer(proc.stdout, dtype=np.float32).copy()).view(x.shape)
