"""A GPU brought to its working clocks just before a timed block.

Between two blocks the GPU idles while the judge draws and copies the next inputs (half a second for a
256 MiB input drawn on the CPU); an idle GPU drops its clocks (an H200 read 345 MHz idle against 1980 MHz
busy), and a block of one short call then runs while they climb back, on both sides. The judge keeps the
device busy for a few milliseconds right before it thaws a runner, in its own context, touching no memory
(a spin kernel: the caches stay as the block's set-up left them), and waits for that work to finish: the
block starts on a GPU at its working clocks, as a kernel in a model's steady state does. Measured on an H100
(docs/harness.md): its SM clock read 1980 MHz idle too, and a call after 0.5 s idle still took ~80 us more
than one after 2-30 ms of this spin (0.65 against 0.56-0.58 ms for softmax at 8192 x 8192 with its copy).

`AGENTKERN_GPU_WARM_MS` sets how long (0: not at all); `AGENTKERN_GPU_WARM=work` warms with matrix products
instead of the spin kernel (what benchmarks/gpu_block_costs.py compares).
"""

from __future__ import annotations

import os
import time

import torch

DEFAULT_WARM_MS = 10.0
SPIN_CYCLES = 100_000  # one spin kernel: ~50 us at 2 GHz, ~0.3 ms at an idle clock


def warm_ms() -> float:
    try:
        return max(0.0, float(os.environ.get("AGENTKERN_GPU_WARM_MS", DEFAULT_WARM_MS)))
    except ValueError:
        return DEFAULT_WARM_MS


def warm(device: torch.device, ms: float | None = None, how: str | None = None) -> None:
    """Keep `device` busy for `ms` of wall time in this process's context, then wait until it is idle again."""
    ms = warm_ms() if ms is None else ms
    if ms <= 0 or device.type != "cuda":
        return
    how = how or os.environ.get("AGENTKERN_GPU_WARM", "spin")
    end = time.perf_counter() + ms / 1e3
    with torch.cuda.device(device):
        if how == "work":
            a = torch.ones(2048, 2048, dtype=torch.float16, device=device)
            while time.perf_counter() < end:
                for _ in range(4):
                    a = torch.mm(a, a).clamp_(-1, 1)
                torch.cuda.synchronize(device)
            return
        while time.perf_counter() < end:
            for _ in range(4):  # queued back to back: the device never idles between them
                torch.cuda._sleep(SPIN_CYCLES)
            torch.cuda.synchronize(device)
