"""A side's output region on a GPU: device memory the judge owns, where the runner copies each call's outputs.

Before a block the judge poisons the region (every byte 0xFF: NaN in any float type). The runner copies its
outputs in, synchronises and answers; the judge stops it, then takes a checksum of the region in its own
CUDA context and only then stops the clock (the fence). GPU work the runner left queued past its answer
either lands before the judge's read, and so inside the time, or after it, and then the region read back
later differs from the checksum, or still holds poison: `background_work` or a wrong answer, never a faster
time. The outputs are read back to the host after the clock, for the comparison with the reference's.
"""

from __future__ import annotations

import torch

from agentkern.harness.arena import ALIGN, aligned, described
from agentkern.harness.rejections import Rejected

POISON = 0xFF


def region_bytes(expected: list[list[torch.Tensor]] | None) -> int:
    """The bytes a block's outputs take in the region, laid out as the runner lays them (runner._to_region)."""
    if not expected:
        return 0
    return sum(aligned(t.numel() * t.element_size()) for outs in expected for t in outs if t.numel())


class DeviceOutputs:
    def __init__(self, role: str, device: torch.device, protocol) -> None:
        self.role, self.device = role, device
        self._protocol = protocol  # what says "the runner broke the protocol" for its side (sides.Side)
        self.region = None  # cuda_ipc.GrowingBuffer, made at the first block that has outputs to place
        self.buffer = None  # its current DeviceBuffer
        self.used = 0
        self.sum_at_stop: int | None = None

    def plan(self, expected: list[list[torch.Tensor]] | None) -> dict:
        """The block command's field for the region (empty when the outputs' sizes are not known yet: the
        reference's trials, whose outputs the runner then describes for a read from its memory)."""
        from agentkern.harness.cuda_ipc import GrowingBuffer

        self.used, self.sum_at_stop = region_bytes(expected), None
        if not self.used:
            return {}
        if self.region is None:
            self.region = GrowingBuffer(self.device)
        self.buffer = self.region.ensure(self.used)
        self.buffer.tensor[: self.used].fill_(POISON)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        # The runner maps the whole buffer once per handle and writes into its first `used` bytes.
        return {"device_outputs": {**self.buffer.spec, "used": self.used}}

    def fence(self) -> None:
        """Inside the timed window, after the runner answered and was stopped."""
        from agentkern.harness.cuda_ipc import checksum

        if self.used:
            self.sum_at_stop = checksum(self.buffer.tensor[: self.used])

    def read(self, desc: dict, expected: torch.Tensor | None) -> torch.Tensor:
        """An output the runner placed in the region, copied to the host."""
        if desc.get("aliases_input") and self.role == "candidate":  # a reference may return a view
            raise Rejected("aliases_input", "its output shares memory with an input")
        try:
            got = described(desc, "device_offset", expected)
        except ValueError as exc:
            raise self._protocol("described an output it cannot have") from exc
        if isinstance(got, torch.Tensor):
            return got
        dtype, shape, offset, nbytes = got
        if offset < 0 or offset % ALIGN or offset + nbytes > self.used:
            raise self._protocol("placed an output outside the region the judge gave it")
        return self.buffer.tensor[offset : offset + nbytes].cpu().view(dtype).view(shape)

    def verify(self) -> None:
        """After the outputs were read: the region is what it was when the clock stopped."""
        from agentkern.harness.cuda_ipc import checksum

        if self.used and self.sum_at_stop is not None and checksum(self.buffer.tensor[: self.used]) != self.sum_at_stop:
            if self.role == "candidate":
                raise Rejected("background_work", "its outputs changed after it answered (GPU work still running)")
            raise self._protocol("changed its outputs after it answered")

    def release_retired(self) -> None:
        if self.region is not None:
            self.region.release_retired()

    def close(self) -> None:
        if self.region is not None:
            self.region.close()
        self.region = self.buffer = None
