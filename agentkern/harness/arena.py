"""Shared memory between the judge and a runner: the inputs of each call, laid out in slots.

The judge owns an anonymous memory file (memfd) and hands its descriptor to the runner at start-up. Before
each block of calls it writes every call's inputs into the file while the runner is frozen, and sends the
runner their layout: (offset, dtype, shape) per tensor. The runner maps the file and wraps the bytes as
tensors without copying. Outputs travel the other way by a different road (the judge reads them from the
frozen runner's memory: runners.py), so nothing a runner writes here is ever read back as a result.
On a GPU the judge also keeps a copy of the file's used bytes in device memory of its own, which the runner
maps through CUDA IPC (cuda_ipc.py): the inputs are on the device before the clock starts, on both sides.
"""

from __future__ import annotations

import mmap
import os

import torch

ALIGN = 64  # a cache line: no two tensors share one, and vector loads stay aligned

DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
    torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128,
)}  # fmt: skip


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def described(desc: dict, key: str, expected: torch.Tensor | None):
    """An output as a runner described it: (dtype, shape, location under `key`, bytes), or a meta tensor standing
    for it when it is not what the reference returns (the comparison says how it differs; no memory is spent
    on it). A description that is not plain data raises ValueError: the caller names the protocol breach."""
    try:
        dtype = DTYPES[str(desc["dtype"])]
        shape = [int(d) for d in desc["shape"]]
        where = int(desc[key])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError("an output it cannot have") from exc
    if expected is not None and (list(expected.shape) != shape or expected.dtype != dtype):
        return torch.empty(shape if all(d >= 0 for d in shape) and len(shape) < 16 else [0], dtype=dtype, device="meta")
    numel = 1
    for d in shape:
        numel *= d
    return dtype, shape, where, numel * torch.empty((), dtype=dtype).element_size()


def aligned(n: int) -> int:
    """`n` bytes rounded up to a whole number of ALIGN-byte slots."""
    return (n + ALIGN - 1) // ALIGN * ALIGN


class Arena:
    """The judge's side: a growable memfd, written slot by slot."""

    def __init__(self, name: str = "agentkern-inputs") -> None:
        self.fd = os.memfd_create(name)  # close-on-exec: a runner gets it only through pass_fds
        self.size = 0
        self.map: mmap.mmap | None = None
        self.on_device = None  # cuda_ipc.GrowingBuffer: the inputs' copy a runner on a GPU reads

    def use_device(self, device: torch.device) -> None:
        """Mirror the inputs on this GPU from the next write on."""
        if device.type == "cuda" and self.on_device is None:
            from agentkern.harness.cuda_ipc import GrowingBuffer

            self.on_device = GrowingBuffer(device)

    def reserve(self, nbytes: int) -> None:
        """Make the file at least `nbytes` long (a runner remaps when told the new size)."""
        if nbytes <= self.size:
            return
        size = max(aligned(nbytes), 1 << 20)
        # The old mapping is dropped, not closed: views of it may still be alive, and die with it.
        os.ftruncate(self.fd, size)
        self.map = mmap.mmap(self.fd, size)
        self.size = size

    def layout(self, calls: list[list]) -> tuple[list[list], int]:
        """(per call, per argument: a tensor's spec or the plain value; total bytes) for these inputs."""
        offset, specs = 0, []
        for args in calls:
            call = []
            for x in args:
                if isinstance(x, torch.Tensor):
                    nbytes = x.numel() * x.element_size()
                    call.append(
                        {"offset": offset, "dtype": dtype_name(x.dtype), "shape": list(x.shape), "nbytes": nbytes}
                    )
                    offset += aligned(max(nbytes, 1))
                else:
                    call.append({"value": x})
            specs.append(call)
        return specs, offset

    def write(self, calls: list[list]) -> list[list]:
        """Write every call's tensors; their specs, for the runner."""
        specs, total = self.layout(calls)
        self.reserve(total)
        for args, call in zip(calls, specs):
            for x, spec in zip(args, call):
                if "offset" in spec and spec["nbytes"]:
                    self.view(spec).copy_(x.detach().cpu().contiguous().view(-1).view(torch.uint8))
        if self.on_device is not None and total:
            mirror = self.on_device.ensure(aligned(total))
            mirror.tensor[:total].copy_(torch.frombuffer(self.map, dtype=torch.uint8, count=total))
            torch.cuda.synchronize(self.on_device.device)
        return specs

    def device_spec(self) -> dict | None:
        """The IPC handle of the inputs' device copy, for a block's command (None off the GPU)."""
        return None if self.on_device is None or self.on_device.buffer is None else self.on_device.buffer.spec

    def release_retired(self) -> None:
        """Free the device buffers the runner has stopped mapping (it answered a command naming the new one)."""
        if self.on_device is not None:
            self.on_device.release_retired()

    def current(self, spec: dict) -> torch.Tensor:
        """The spec's bytes as the runner left them: the device copy on a GPU (what it reads), else the file."""
        if self.on_device is not None and self.on_device.buffer is not None:
            return self.on_device.buffer.tensor[spec["offset"] : spec["offset"] + spec["nbytes"]].cpu()
        return self.view(spec)

    def view(self, spec: dict) -> torch.Tensor:
        """The spec's bytes in the judge's mapping, as uint8 (what the runner may have changed)."""
        return torch.frombuffer(self.map, dtype=torch.uint8, count=spec["nbytes"], offset=spec["offset"])

    def close(self) -> None:
        self.map = None
        if self.on_device is not None:
            self.on_device.close()
            self.on_device = None
        os.close(self.fd)


class Mapping:
    """The runner's side: the same file, mapped, remapped when the judge says it grew."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = 0
        self.map: mmap.mmap | None = None

    def ensure(self, size: int) -> None:
        if size > self.size:
            self.map = mmap.mmap(self.fd, size)
            self.size = size

    def tensor(self, spec: dict, on_device: torch.Tensor | None = None) -> torch.Tensor:
        """The spec's tensor: a view of the file, or of the judge's device copy when given (on a GPU)."""
        dtype = DTYPES[spec["dtype"]]
        if not spec["nbytes"]:
            return torch.empty(spec["shape"], dtype=dtype, device=on_device.device if on_device is not None else None)
        if on_device is not None:
            raw = on_device[spec["offset"] : spec["offset"] + spec["nbytes"]]
        else:
            raw = torch.frombuffer(self.map, dtype=torch.uint8, count=spec["nbytes"], offset=spec["offset"])
        return raw.view(dtype).view(spec["shape"])

    def args(self, call: list, on_device: torch.Tensor | None = None) -> list:
        """The call's arguments: views of the file, or of the judge's device copy when given (on a GPU)."""
        return [self._arg(spec, on_device) for spec in call]

    def _arg(self, spec: dict, on_device: torch.Tensor | None = None):
        if "offset" in spec:
            return self.tensor(spec, on_device)
        if spec.get("empty"):  # a shape only (gpu_plan.py): memory of its own, never written or read by the judge
            return torch.empty(spec["shape"], dtype=DTYPES[spec["dtype"]])
        return spec["value"]
