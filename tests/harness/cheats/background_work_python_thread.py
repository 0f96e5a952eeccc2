"""Cheat: return before the work is done; a Python thread fills the output afterwards.

forward() allocates the output, starts a threading.Thread that computes ReLU into it, and returns. A
timer around the call measures only the thread launch. To stay "correct" it waits for the thread on
its first 9 calls (the default number of correctness trials); after that it returns at once and never
waits: the real work overlaps whatever the harness does next (for example the reference's timed run,
which it also slows down). The thread outlives the call.
"""
# problem: relu
# expect: rejected background_work

import threading

import torch
import torch.nn as nn

_SYNC_CALLS = 9


def _relu_into(x: torch.Tensor, out: torch.Tensor) -> None:
    torch.where(x > 0, x, torch.zeros((), dtype=x.dtype), out=out)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._calls = 0
        self._running: list = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._running = [t for t in self._running if t.is_alive()]
        out = torch.empty_like(x)
        worker = threading.Thread(target=_relu_into, args=(x, out), daemon=True)
        worker.start()
        self._calls += 1
        if self._calls <= _SYNC_CALLS:
            worker.join()
        else:
            self._running.append(worker)
        return out
