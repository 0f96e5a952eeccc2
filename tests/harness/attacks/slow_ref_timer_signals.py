"""Attack (slowing the reference): interval-timer signals whose handlers burn time outside the candidate.

At import it arms signal.setitimer(ITIMER_REAL) (SIGALRM) and setitimer(ITIMER_PROF) (SIGPROF), each
every 2 ms, with a Python handler that busy-waits 1.5 ms unless the candidate's forward() is running.
Handlers run in the main thread between bytecodes, i.e. inside the reference's timed calls and the
judge's loop around them. forward() is an honest ReLU (torch.where; no torch.relu) and disables the burn
for its own duration, so a speedup well beyond ~1x is the reference slowed down.
"""
# problem: relu
# expect: no-advantage

import signal
import time

import torch
import torch.nn as nn

_IN_FORWARD = [0]
_clock = time.perf_counter


def _burn(signum, frame) -> None:
    if _IN_FORWARD[0]:
        return
    end = _clock() + 0.0015
    while _clock() < end:
        pass


signal.signal(signal.SIGALRM, _burn)
signal.signal(signal.SIGPROF, _burn)
signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)
signal.setitimer(signal.ITIMER_PROF, 0.002, 0.002)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _IN_FORWARD[0] += 1
        try:
            return torch.where(x > 0, x, torch.zeros((), dtype=x.dtype))
        finally:
            _IN_FORWARD[0] -= 1
