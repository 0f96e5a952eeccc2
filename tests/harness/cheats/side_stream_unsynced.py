"""Cheat (GPU only): run the softmax on a private CUDA stream and return without synchronising.

Timing with CUDA events recorded on the current (default) stream, or with a host timer plus
torch.cuda.current_stream().synchronize(), measures nothing of the work queued on the side stream: the
kernel looks free. It never calls current_stream().wait_stream(side) or out.record_stream(), so a
consumer on the default stream can even read the output before it is written, and the input may be
freed and reused while the side stream still reads it. On a CPU-only machine torch.cuda.Stream() raises,
so this file can only be judged by a static check or on a GPU.
"""
# problem: softmax
# expect: rejected side_stream

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._stream = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._stream is None:
            self._stream = torch.cuda.Stream(device=x.device if x.is_cuda else None)
        if not x.is_cuda:
            x = x.cuda(non_blocking=True)
        with torch.cuda.stream(self._stream):
            e = (x - x.amax(dim=-1, keepdim=True)).exp()
            out = e / e.sum(dim=-1, keepdim=True)
        return out  # no wait_stream / record_stream / synchronize
