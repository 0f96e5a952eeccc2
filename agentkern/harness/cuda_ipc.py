"""Device memory the judge owns and a runner maps: CUDA IPC through the driver API (libcuda, via ctypes).

On a GPU the judge keeps each side's inputs and outputs in device memory of its own (`DeviceBuffer`,
allocated with cuMemAlloc, never from torch's caching allocator, so that a handle exposes that buffer and
nothing else of the judge's) and hands the runner an IPC handle to it. The runner maps it (`open_buffer`):
inputs are read in place, outputs copied in place, so no host copy sits inside a timed block. Measured on
an H200 (2026-11-26): the driver's handles open under bubblewrap with its own PID and IPC namespaces when
the GPU's device nodes are bound in; torch's own CUDA tensor sharing does not (its reference counts live in
/dev/shm, which the sandbox makes private).
"""

from __future__ import annotations

import base64
import ctypes
import functools

import torch

HANDLE_BYTES = 64
_LAZY_ENABLE_PEER_ACCESS = 1


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * HANDLE_BYTES)]


@functools.lru_cache(maxsize=1)
def _driver():
    lib = ctypes.CDLL("libcuda.so.1")
    u64p = ctypes.POINTER(ctypes.c_uint64)
    lib.cuMemAlloc_v2.argtypes = [u64p, ctypes.c_size_t]
    lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    lib.cuIpcGetMemHandle.argtypes = [ctypes.POINTER(_Handle), ctypes.c_uint64]
    lib.cuIpcOpenMemHandle_v2.argtypes = [u64p, _Handle, ctypes.c_uint]
    lib.cuIpcCloseMemHandle.argtypes = [ctypes.c_uint64]
    return lib


def _check(rc: int, what: str) -> None:
    if rc != 0:
        raise RuntimeError(f"{what} failed with CUDA driver error {rc}")


def _current_context(device: torch.device) -> None:
    """Make torch's primary context current on this thread: the driver calls below act on it."""
    torch.cuda.set_device(device.index if device.index is not None else torch.cuda.current_device())
    torch.empty(1, device=device)


class _Memory:
    """Raw device memory as torch sees it (__cuda_array_interface__): bytes."""

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 3}


def _wrap(ptr: int, nbytes: int, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(_Memory(ptr, nbytes), device=device)


class DeviceBuffer:
    """The judge's side: `nbytes` of device memory, its IPC handle, and a uint8 tensor over it."""

    def __init__(self, nbytes: int, device: torch.device) -> None:
        _current_context(device)
        drv = _driver()
        self.ptr = ctypes.c_uint64()
        _check(drv.cuMemAlloc_v2(ctypes.byref(self.ptr), ctypes.c_size_t(nbytes)), "cuMemAlloc")
        handle = _Handle()
        _check(drv.cuIpcGetMemHandle(ctypes.byref(handle), self.ptr), "cuIpcGetMemHandle")
        self.nbytes = nbytes
        self.spec = {"handle": base64.b64encode(ctypes.string_at(ctypes.byref(handle), HANDLE_BYTES)).decode()}
        self.spec["size"] = nbytes
        self.tensor = _wrap(self.ptr.value, nbytes, device)

    def close(self) -> None:
        if self.ptr.value:
            self.tensor = None
            torch.cuda.synchronize()
            _driver().cuMemFree_v2(self.ptr)
            self.ptr = ctypes.c_uint64(0)


class GrowingBuffer:
    """The judge's buffer for one side's inputs or outputs: replaced by a larger one when a block needs more
    (at least 1 MiB; callers ask for whole ALIGN-byte slots). A replaced buffer is freed only by release_retired, once the runner has
    answered the command that named the new handle (it unmaps the old one on reading that command)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.buffer: DeviceBuffer | None = None
        self.retired: list[DeviceBuffer] = []

    def ensure(self, nbytes: int) -> DeviceBuffer:
        if self.buffer is None or self.buffer.nbytes < nbytes:
            if self.buffer is not None:
                self.retired.append(self.buffer)
            self.buffer = DeviceBuffer(max(nbytes, 1 << 20), self.device)
        return self.buffer

    def release_retired(self) -> None:
        for buffer in self.retired:
            buffer.close()
        self.retired = []

    def close(self) -> None:
        self.release_retired()
        if self.buffer is not None:
            self.buffer.close()
            self.buffer = None


class OpenedBuffers:
    """The runner's side: the judge's buffers mapped, one per handle; an old one is unmapped when the judge
    sends a new handle in its place (the judge frees the old buffer only after that block's answer)."""

    def __init__(self) -> None:
        self.opened: dict[str, tuple[int, torch.Tensor]] = {}

    def get(self, role: str, spec: dict, device: torch.device) -> torch.Tensor:
        key = f"{role}:{spec['handle']}"
        if key not in self.opened:
            for old in [k for k in self.opened if k.startswith(f"{role}:")]:
                ptr, _ = self.opened.pop(old)
                torch.cuda.synchronize(device)
                _driver().cuIpcCloseMemHandle(ctypes.c_uint64(ptr))
            _current_context(device)
            handle = _Handle()
            ctypes.memmove(ctypes.byref(handle), base64.b64decode(spec["handle"]), HANDLE_BYTES)
            ptr = ctypes.c_uint64()
            _check(_driver().cuIpcOpenMemHandle_v2(ctypes.byref(ptr), handle, _LAZY_ENABLE_PEER_ACCESS), "cuIpcOpen")
            self.opened[key] = (ptr.value, _wrap(ptr.value, int(spec["size"]), device))
        return self.opened[key][1]


def checksum(data: torch.Tensor) -> int:
    """The wrapping sum of the 8-byte words of `data` (uint8, a multiple of 8 bytes), computed where `data`
    lives, in one read: taken when a block's clock stops and again when its outputs are read, so outputs that
    change in between (GPU work still running after the runner answered) are seen. (A weighted sum, which
    also sees words swapped, cost three more passes over the region inside the timed window; late work
    that only permutes its own finished words gains nothing.)"""
    return int(data.view(torch.int64).sum())
