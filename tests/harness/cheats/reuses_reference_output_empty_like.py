"""Cheat: the "empty kernel". Allocate the output and never write to it.

The reference ran just before us. If the harness has let go of the reference's output (or of a
temporary holding the same values), the allocator may hand that freed block straight back to our
torch.empty_like, and the stale memory already holds the right answer. The "kernel" costs nothing.

On CUDA the caching allocator makes this reliable. On CPU (glibc malloc behind c10's allocator) it is
hit-or-miss: measured on torch 2.13 CPU, with a harness that keeps the reference output alive it never
works; with one that converts the reference (`ref = model(x).double()`, which frees the fp32 output
before the candidate runs) the freed 4 MiB block comes back holding the answer in some trials but not in
all five.

Since harness v2 the reference runs in another process: no block this process frees ever held its
answer, so the "kernel" returns whatever the allocator had, and is judged incorrect.
"""
# problem: softmax
# expect: incorrect

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        # "launch" the kernel: nothing is computed, the output is whatever the allocator handed back
        return out
