"""A prediction for any compiled GPU kernel, template or hand-written, on a GPU that is not here.

The inputs are facts, not a template's parameters: the work at the size the kernel will run at (FLOPs and
bytes, harness/meta_work.py), what the compiler made of each kernel for the target's architecture
(registers, shared memory, spills, the tensor-core and async-copy instructions in its PTX, occupancy:
harness/triton_compile.py), its grid at that size (harness/gpu_plan.py), and the target's published figures.
The reference is priced as eager PyTorch runs it: one kernel per aten op, GEMMs at cuBLAS-class efficiency
on tensor cores for fp16/bf16 (fp32 stays on the CUDA cores: PyTorch leaves TF32 off by default), attention
as one FlashAttention kernel.

The efficiencies below are stated assumptions, not yet calibrated against measurements; every prediction
carries them in its notes and an uncertainty band, and is marked predicted wherever it is shown. No torch.
"""

from __future__ import annotations

import math

from agentkern import targets as T
from agentkern.targets import gpu_arch
from agentkern.targets.costmodel import LAUNCH_MS_EAGER, LAUNCH_MS_TRITON, STREAM_EFFICIENCY, Prediction
from agentkern.types import Target

MODEL = "compiled-kernel model v1 (one factor fitted, otherwise uncalibrated)"
BAND = (0.6, 1.6)  # kernel time between 0.6x and 1.6x of the point prediction: the model's stated uncertainty
TENSOR_CORE_EFFICIENCY = 0.70  # a pipelined tensor-core GEMM's share of the dense peak
MMA_SYNC_ON_HOPPER = 0.60  # mma.sync reaches about this share of what wgmma does on sm_90
CUDA_CORE_EFFICIENCY = 0.60
UNPIPELINED = 0.70  # a compute-bound kernel with no cp.async / TMA / wgmma overlap of loads and math
SPILLS = 0.70
# Tensor-core kernels that also take exponentials between their matmuls (attention's online softmax) keep the
# tensor cores busy less of the time: the one fitted factor, the median of measured / predicted over the six
# H100 shapes of knowledge_base/calibration/gpu_measurements.json (benchmarks/costmodel_calibration.py).
SOFTMAX_BETWEEN_MATMULS = 0.67
EAGER = {"gemm": 0.75, "attention": 0.55, "elementwise": 0.85, "reduction": 0.75}
GEMM_OPS = {"mm", "bmm", "addmm", "baddbmm", "matmul", "linear", "convolution", "_convolution", "addbmm"}
REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "prod", "softmax", "_softmax", "log_softmax",
              "_log_softmax", "native_layer_norm", "_fused_rms_norm", "var_mean", "var", "std", "norm"}  # fmt: skip
HALF = ("float16", "bfloat16")


TF32_SPLIT = 3  # products per fp32 product when fp32 operands go through TF32 tensor cores


def _tensor_peak(target: Target, dtype: str) -> float:
    if dtype in HALF:
        return T.peak_tflops(target, dtype)
    # fp32 operands on tensor cores: a kernel that passes fp32's tolerance there splits each value into TF32
    # parts and takes three products (tl.dot's "tf32x3"; plain TF32 misses the 1e-4 tolerance), a third of
    # the TF32 rate, and never less than the CUDA cores give.
    tf32 = target.peak_tflops.get("tf32", target.peak_tflops["fp32"])
    return max(tf32 / TF32_SPLIT, target.peak_tflops["fp32"])


# ---- the reference --------------------------------------------------------------------------------------
def eager_reference_ms(target: Target, eager_ops: list[dict]) -> float:
    """Eager PyTorch on `target`: each op one kernel, at the efficiency its kind reaches."""
    total = 0.0
    bandwidth = target.memory_bandwidth_gbs * 1e6  # bytes per ms
    for op in eager_ops:
        moved = op["bytes_in"] + op["bytes_out"]
        name, flops, dtype = op["op"], op["flops"], op["dtype"]
        if name == "scaled_dot_product_attention":
            peak = _tensor_peak(target, dtype) if dtype in HALF else target.peak_tflops["fp32"]
            compute = flops / (peak * 1e9 * EAGER["attention"])
            total += max(compute, moved / (bandwidth * EAGER["elementwise"]))
        elif name in GEMM_OPS or flops > 0:
            peak = _tensor_peak(target, dtype) if dtype in HALF else target.peak_tflops["fp32"]
            total += max(flops / (peak * 1e9 * EAGER["gemm"]), moved / (bandwidth * EAGER["gemm"]))
        else:
            kind = "reduction" if name in REDUCTIONS else "elementwise"
            total += moved / (bandwidth * EAGER[kind])
        total += LAUNCH_MS_EAGER
    return total


# ---- the candidate --------------------------------------------------------------------------------------
def _main_kernel(compiled: dict) -> tuple[dict, list[int]]:
    """The kernel whose launch is largest (blocks x threads): it decides the time; and its grid."""
    kernels = {k["kernel"]: k for k in compiled["kernels"] if "error" not in k and "unavailable" not in k}
    best, grid = None, [1, 1, 1]
    for launch in compiled.get("launches", []):
        k = kernels.get(launch["kernel"])
        if k is None:
            continue
        size = math.prod(launch["grid"]) * k["threads"]
        if best is None or size > math.prod(grid) * best["threads"]:
            best, grid = k, launch["grid"]
    if best is None:
        raise ValueError("no compiled kernel among the launches")
    return best, grid


def predict_compiled(
    target: Target, compiled: dict, work: dict, eager_ops: list[dict] | None, launches_per_call: int
) -> Prediction:
    """Kernel and reference times from the compiled kernels and the work at one size."""
    arch = gpu_arch.arch_of(target)
    kernel, grid = _main_kernel(compiled)
    notes: list[str] = []
    dtype = work.get("dtype", "float32")
    mix = kernel["instructions"]
    tensor = mix.get("wgmma", 0) + mix.get("mma", 0) + mix.get("tcgen05", 0) > 0
    if tensor:
        peak, compute_eff = _tensor_peak(target, dtype), TENSOR_CORE_EFFICIENCY
        if arch.triton_arch >= 90 and not (mix.get("wgmma") or mix.get("tcgen05")):
            compute_eff *= MMA_SYNC_ON_HOPPER
            notes.append(
                f"mma.sync on {arch.ptx_arch}: no wgmma, about {MMA_SYNC_ON_HOPPER:.0%} of the tensor-core rate"
            )
        notes.append(f"tensor cores ({', '.join(n for n in ('wgmma', 'mma', 'tcgen05') if mix.get(n))})")
        if dtype not in HALF:
            notes.append(f"{dtype} operands: priced as three TF32 products per product")
    else:
        peak, compute_eff = target.peak_tflops["fp32"], CUDA_CORE_EFFICIENCY
        notes.append("no tensor-core instructions: CUDA cores")
    if tensor and mix.get("ex2"):
        compute_eff *= SOFTMAX_BETWEEN_MATMULS
        notes.append("exponentials between the matmuls (a softmax): tensor cores idle part of the time")
    if tensor and not (mix.get("cp_async") or mix.get("tma") or mix.get("wgmma")):
        compute_eff *= UNPIPELINED
        notes.append("loads not overlapped with math (no cp.async or TMA)")
    if kernel.get("spill_bytes"):
        compute_eff *= SPILLS
        notes.append(f"{kernel['spill_bytes']} bytes of registers spilled per thread")
    blocks = math.prod(grid)
    per_sm = max(kernel.get("blocks_per_sm") or 1, 1)
    slots = target.sms * per_sm
    waves = math.ceil(blocks / slots)
    wave_eff = blocks / (waves * slots) if blocks >= target.sms else blocks / target.sms
    if wave_eff < 0.9:
        notes.append(f"{blocks} blocks over {target.sms} SMs x {per_sm}: {wave_eff:.0%} of the SMs busy on average")
    resident_threads = min(blocks, slots) * kernel["threads"]
    needed = target.memory_bandwidth_gbs * 1e9 * 600e-9  # bytes in flight for the full bandwidth (Little's law)
    vector = 16 if (mix.get("ld_global_v4") or mix.get("cp_async") or mix.get("tma")) else 4
    memory_eff = STREAM_EFFICIENCY * min(1.0, resident_threads * vector * 4 / needed)
    compute_ms = work.get("flops", 0.0) / (peak * 1e9 * compute_eff * wave_eff) if work.get("flops") else 0.0
    memory_ms = work.get("bytes", 0.0) / (target.memory_bandwidth_gbs * 1e6 * max(memory_eff, 0.05))
    notes.append("compute-bound" if compute_ms >= memory_ms else "memory-bound")
    bound = T.roofline_ms(target, work.get("flops", 0.0), work.get("bytes", 0.0), dtype)
    kernel_ms = max(compute_ms, memory_ms, bound) + launches_per_call * LAUNCH_MS_TRITON
    if eager_ops:
        reference = eager_reference_ms(target, eager_ops)
    else:
        reference = bound / 0.7 + LAUNCH_MS_EAGER
        notes.append("reference priced from the roofline (its eager ops are not known at this size)")
    low, high = kernel_ms * BAND[0], kernel_ms * BAND[1]
    band = {"kernel_ms": [low, high], "speedup": [reference / high, reference / low]}
    return Prediction(kernel_ms, reference, notes=notes, model=MODEL, bound_ms=bound, band=band)
