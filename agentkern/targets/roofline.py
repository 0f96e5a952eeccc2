"""The roofline bound on a kernel's time: what `roofline_fraction` divides by.

Every figure errs on the fast side, so a legitimate kernel must never beat its bound: a float32 GEMM may use
TF32 tensor cores, a dtype without its own units is bounded by the fastest unit, and on a CPU data that fits in
the caches is served at the in-cache bandwidth. Measured figures still carry noise, so a kernel is beyond the
roofline only when it beats the bound by more than ROOFLINE_MARGIN (`beyond_roofline`).
"""

from __future__ import annotations

from agentkern.targets import host
from agentkern.types import DTYPE_SHORT, Target

# A kernel is beyond the roofline only when faster than bound * (1 - ROOFLINE_MARGIN): the one definition.
ROOFLINE_MARGIN = 0.10


def beyond_roofline(kernel_ms: float | None, bound_ms: float | None, margin: float = ROOFLINE_MARGIN) -> bool:
    """Whether a kernel time beats the roofline bound by more than the margin (faster than the hardware allows)."""
    return bool(kernel_ms) and bool(bound_ms) and kernel_ms < bound_ms * (1.0 - margin)


def peak_tflops(target: Target, dtype: str) -> float:
    """The target's peak TFLOP/s for arithmetic in `dtype` ("float16", "torch.bfloat16", ...)."""
    dtype = dtype.removeprefix("torch.")
    if dtype == "float32":
        keys = ("fp32", "tf32", "fp32_amx")  # tl.dot and cuBLAS may use TF32 for fp32 inputs, a CPU AMX tiles
    elif dtype.startswith("float8"):
        keys = ("fp8",)
    elif dtype in ("int8", "uint8"):
        keys = ("int8",)  # int8 tensor cores and VNNI outrun fp32 many times over
    else:
        keys = (DTYPE_SHORT.get(dtype, "fp32"),)
    found = [target.peak_tflops[k] for k in keys if k in target.peak_tflops]
    # A dtype the hardware has no units for (fp8 on an A100) is emulated: the fastest unit still bounds it.
    return max(found) if found else max(target.peak_tflops.values())


def roofline_ms(target: Target, flops: float, bytes_moved: float, dtype: str) -> float:
    """The least time a kernel doing `flops` and moving `bytes_moved` can take: max(compute time, memory time)."""
    if flops <= 0 and bytes_moved <= 0:
        return 0.0
    bandwidth = target.memory_bandwidth_gbs
    if target.kind == "cpu":
        # Timed runs repeat the call, so data that fits in the caches is served from them, not from DRAM.
        cache_mb = max(target.l3_mb or 0.0, (target.l2_mb or 0.0) * (target.cores or 1))
        if bytes_moved <= cache_mb * 2**20:
            bandwidth = max(bandwidth, host.cpu_cache_bandwidth_gbs())
    return max(flops / (peak_tflops(target, dtype) * 1e9), bytes_moved / (bandwidth * 1e6))
