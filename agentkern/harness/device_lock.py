"""Measurements never share a device: a candidate is timed alone; builds and checks overlap.

Several evaluations may run at once (`--workers N`, a Ray node running several tasks). Each device has a
readers-writer lock made of flock()s on files in a lock folder:
- `timing_lock(device)`, exclusive: held while a candidate is timed, by the torch.compile baseline while it
  is checked and timed, and by the counters' run; `timing_lock_within(device, seconds)`, the same with a
  bounded wait, while agentkern measures the host's bandwidths and peak (targets/host.py). Nothing else runs on the device meanwhile: not another
  measurement, not a correctness check, not a build.
- `checking(device)`, shared: held while a candidate's correctness trials run. Checks overlap one another
  and builds (a check's verdict does not depend on its speed), never a measurement.
- `building(device)`, shared, CPU only: held while a worker imports and builds (g++, torch.compile,
  torch's import in a spare or in a worker started for its request). On a CPU a build takes a core, so it
  never runs beside a measurement; on a GPU a build runs on the CPU and does not disturb the GPU, so it
  takes no lock there.
A waiting writer goes first: it takes the `gate` before waiting for the device, and new readers pass the
gate only one at a time, so a steady stream of builds and checks cannot starve a measurement. flock locks
belong to the open file and die with the process: a killed worker never leaves a lock held.

Lock files are keyed by device:
- the CPU: one set per machine (`cpu`): OpenMP kernels and torch use every core;
- a GPU: one set per physical GPU, keyed by its UUID, not its index: with CUDA_VISIBLE_DEVICES (which
  Ray sets for each task) two processes both see "cuda:0" on different GPUs, and must not wait on
  each other.
They live in AGENTKERN_LOCK_DIR when set, else AGENTKERN_HOME/locks: every worker on the node that shares
that folder is serialised (point several AGENTKERN_HOMEs at one AGENTKERN_LOCK_DIR to serialise them too).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
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
    if getattr(device, "type", str(device).split(":")[0]) != "cuda":
        return "cpu"
    import torch

    device = torch.device(device)

    index = device.index if device.index is not None else torch.cuda.current_device()
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if uuid is None and visible:  # no UUID: the physical index Ray or the user selected
        uuid = visible.split(",")[index]
    return f"gpu-{uuid if uuid is not None else index}"


def _open(device, role: str) -> int:
    name = re.sub(r"[^\w.-]+", "_", device_key(device))
    return os.open(lock_dir() / f"{role}-{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)  # not inherited


@contextlib.contextmanager
def timing_lock(device):
    """The device to this process alone for the block (blocks until every other holder has left)."""
    with _through_gate(device, fcntl.LOCK_EX):
        yield


@contextlib.contextmanager
def timing_lock_within(device, seconds: float, poll_s: float = 0.05):
    """timing_lock, waiting at most `seconds` (a cap for agentkern's own measurements, never a candidate's):
    yields True with the device held, or False, holding nothing, when it could not be had in time."""
    deadline = time.monotonic() + max(seconds, 0.0)
    gate, device_fd = _open(device, "gate"), _open(device, "device")
    try:
        held = _flock_by(gate, fcntl.LOCK_EX, deadline, poll_s) and _flock_by(
            device_fd, fcntl.LOCK_EX, deadline, poll_s
        )
        os.close(gate)
        gate = None
        yield held
    finally:
        if gate is not None:
            os.close(gate)
        os.close(device_fd)


def _flock_by(fd: int, mode: int, deadline: float, poll_s: float) -> bool:
    """flock(fd, mode), retried until `deadline` (time.monotonic()): whether it was taken."""
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(poll_s, left))


@contextlib.contextmanager
def building(device):
    """A build or import on the CPU: beside other builds and checks, never beside a measurement. No lock on
    a GPU, where a build runs on the CPU."""
    if device_key(device) != "cpu":
        yield
        return
    with _through_gate(device, fcntl.LOCK_SH):
        yield


@contextlib.contextmanager
def checking(device):
    """Correctness trials on `device`: beside other checks and builds, never beside a measurement."""
    with _through_gate(device, fcntl.LOCK_SH):
        yield


@contextlib.contextmanager
def _through_gate(device, mode: int):
    """Take the gate, then the device in `mode` (LOCK_EX or LOCK_SH), then let the gate go. A writer waiting
    for the device holds the gate meanwhile, so readers arriving after it queue behind it."""
    gate, device_fd = _open(device, "gate"), _open(device, "device")
    try:
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(device_fd, mode)
        os.close(gate)
        gate = None
        yield
    finally:
        if gate is not None:
            os.close(gate)
        os.close(device_fd)  # closing the last descriptor releases the lock
