"""What a GPU architecture lets one kernel launch use, and how many of its blocks an SM holds at once.

The limits are CUDA's, per compute capability (CUDA C++ Programming Guide, "Technical Specifications per
Compute Capability"): a Triton or CUDA kernel compiled for the architecture is refused here, before any GPU
sees it, when one block needs more than they allow, as the driver would refuse the launch. Occupancy is the
classic calculation from the compiled registers, shared memory and threads per block. No torch, no triton.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from agentkern.types import Target

_GUIDE = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#features-and-technical-specifications"


@dataclass(frozen=True)
class Arch:
    compute_capability: str
    triton_arch: int  # GPUTarget("cuda", triton_arch, 32)
    ptx_arch: str  # what nvcc's -arch takes, and what the verdict shows
    max_shared_per_block: int  # bytes of shared memory one block may use (dynamic + static, opt-in maximum)
    shared_per_sm: int  # bytes of shared memory per SM
    registers_per_sm: int = 65536
    max_registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    max_threads_per_sm: int = 2048
    max_threads_per_block: int = 1024
    max_blocks_per_sm: int = 32
    reserved_shared_per_block: int = 1024  # the driver keeps 1 KB of each block's shared memory
    source: str = _GUIDE


ARCHS: dict[str, Arch] = {
    a.compute_capability: a
    for a in (
        Arch("8.0", 80, "sm_80", 163 * 1024, 164 * 1024),
        Arch("8.6", 86, "sm_86", 99 * 1024, 100 * 1024, max_threads_per_sm=1536, max_blocks_per_sm=16),
        Arch("8.9", 89, "sm_89", 99 * 1024, 100 * 1024, max_threads_per_sm=1536, max_blocks_per_sm=24),
        Arch("9.0", 90, "sm_90a", 227 * 1024, 228 * 1024),
        Arch("10.0", 100, "sm_100a", 227 * 1024, 228 * 1024),
    )
}


def arch_of(target: Target) -> Arch | None:
    """The architecture of a GPU target (None for the CPU, or a compute capability this table lacks)."""
    return ARCHS.get(target.compute_capability or "")


@dataclass(frozen=True)
class Resources:
    """One compiled kernel's needs per block, as the compiler reports them."""

    registers_per_thread: int
    shared_bytes: int  # dynamic + static shared memory per block
    threads_per_block: int
    spill_bytes: int = 0  # local memory per thread (stack frame, spills)


def launch_refusal(arch: Arch, res: Resources, display_name: str) -> str | None:
    """Why `res` cannot launch on `arch` (as the driver would say it), or None."""
    if res.shared_bytes > arch.max_shared_per_block:
        return (
            f"needs {res.shared_bytes / 1024:.0f} KiB of shared memory per block; {display_name} "
            f"({arch.ptx_arch}) allows {arch.max_shared_per_block / 1024:.0f} KiB"
        )
    if res.threads_per_block > arch.max_threads_per_block:
        return f"{res.threads_per_block} threads per block; {arch.ptx_arch} allows {arch.max_threads_per_block}"
    if res.registers_per_thread > arch.max_registers_per_thread:
        return (
            f"{res.registers_per_thread} registers per thread; {arch.ptx_arch} allows {arch.max_registers_per_thread}"
        )
    if _allocated_registers(res) > arch.max_registers_per_block:
        return (
            f"{res.registers_per_thread} registers x {res.threads_per_block} threads per block; "
            f"{arch.ptx_arch} allows {arch.max_registers_per_block} registers per block"
        )
    return None


def _allocated_registers(res: Resources) -> int:
    # Registers are allocated per warp in units of 256 (CUDA occupancy calculator).
    per_warp = math.ceil(res.registers_per_thread * 32 / 256) * 256
    return per_warp * math.ceil(res.threads_per_block / 32)


def blocks_per_sm(arch: Arch, res: Resources) -> int:
    """Blocks of this kernel one SM holds at once (0: it cannot launch)."""
    if launch_refusal(arch, res, "") is not None:
        return 0
    by_threads = arch.max_threads_per_sm // max(res.threads_per_block, 1)
    by_registers = arch.registers_per_sm // max(_allocated_registers(res), 1)
    used_shared = res.shared_bytes + arch.reserved_shared_per_block
    by_shared = arch.shared_per_sm // used_shared if res.shared_bytes else arch.max_blocks_per_sm
    return max(0, min(arch.max_blocks_per_sm, by_threads, by_registers, by_shared))


def occupancy(arch: Arch, res: Resources) -> float:
    """Resident warps per SM over the most an SM can hold."""
    warps = blocks_per_sm(arch, res) * math.ceil(res.threads_per_block / 32)
    return warps / (arch.max_threads_per_sm // 32)
