"""One timing at a time per device: an exclusive file lock held for the whole timing phase.

Several evaluations may run at once (`--workers N`, a Ray node running several tasks). Loading, compiling
and checking correctness overlap freely; measuring does not: a worker takes the device's lock before its
first timed call and the kernel releases it when the worker exits or finishes timing, even if it is killed
(flock locks belong to the open file, which dies with the process). So two measurements never share the
CPU's cores or a GPU.

The lock file is keyed by what is being measured:
- the CPU: one lock per machine (`timing-cpu.lock`): OpenMP kernels and torch use every core;
- a GPU: one lock per physical GPU, keyed by its UUID, not its index: with CUDA_VISIBLE_DEVICES (which
  Ray sets for each task) two processes both see "cuda:0" on different GPUs, and must not wait on
  each other.

It lives in AGENTKERN_LOCK_DIR when set, else AGENTKERN_HOME/locks: every worker on the node that shares
that folder is serialised (point several AGENTKERN_HOMEs at one AGENTKERN_LOCK_DIR to serialise them too).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from pathlib import Path


def lock_dir() -> Path:
    explicit = os.environ.get("AGENTKERN_LOCK_DIR")
    if explicit:
        path = Path(explicit)
    else:
        from agentkern.config import home

        path = home() / "locks"
    path.mkdir(parents=True, exist_ok=True)
    return path


def device_key(device) -> str:
    """'cpu', or 'gpu-<uuid>' for the CUDA device `device` (a torch.device) in this process."""
    if getattr(device, "type", str(device)) != "cuda":
        return "cpu"
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if uuid is None and visible:  # no UUID: the physical index Ray or the user selected
        uuid = visible.split(",")[index]
    return f"gpu-{uuid if uuid is not None else index}"


@contextlib.contextmanager
def timing_lock(device):
    """Hold the device's timing lock for the duration of the block (blocks until it is free)."""
    name = re.sub(r"[^\w.-]+", "_", device_key(device))
    fd = os.open(lock_dir() / f"timing-{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock
