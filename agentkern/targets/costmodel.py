"""A roofline cost model for GPU candidates, for runs whose target GPU is not on this machine.

Without the GPU, the harness checks a Triton candidate's correctness in the interpreter but cannot time it.
This model predicts both sides instead, so the loop can still rank candidates:

- the reference as eager PyTorch runs it: one kernel per op (recognize.py lists them in the spec's
  `eager_ops`), each streaming its operands and result at a typical fraction of the bandwidth, GEMMs at a
  fraction of the fp32 peak (PyTorch leaves TF32 off for fp32 matmuls by default);
- a template candidate from its parameters: bytes moved (including re-reads a looped row kernel makes and
  the DRAM traffic a GEMM's tile order causes), shared memory and registers per program (a tile that does
  not fit fails to launch; one that spills slows down), SM occupancy, waves, and pipelining depth.

It is not calibrated against hardware yet: it ranks, it does not promise. Every figure it gives is marked
"predicted, not measured" wherever it is shown or stored; `agentkern eval --target <gpu>` on the GPU re-times
the kernels it picked. No torch here.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from agentkern import targets as T
from agentkern.targets import gpu_arch
from agentkern.types import GEMM_FAMILIES, ROW_FAMILIES, OpSpec, Target

LAUNCH_MS_EAGER = 0.005  # PyTorch dispatch + kernel launch, per eager op
LAUNCH_MS_TRITON = 0.008  # Triton's Python launcher costs a little more per call
STREAM_EFFICIENCY = 0.85  # share of DRAM bandwidth a well-formed streaming kernel reaches
EAGER_EFFICIENCY = {"elementwise": 0.85, "reduction": 0.75, "gemm": 0.80}
MEMORY_LATENCY_S = 600e-9  # DRAM round trip: bytes in flight needed = bandwidth x latency (Little's law)
REGISTERS_PER_SM = 65536
REDUCTION_OPS = {"softmax", "log_softmax", "layer_norm", "rms_norm", "sum", "mean", "amax", "amin", "max", "min"}
FP32 = 4


@dataclass
class Prediction:
    kernel_ms: float | None
    reference_ms: float
    feasible: bool = True
    notes: list[str] = field(default_factory=list)
    model: str = "roofline cost model v1 (uncalibrated)"
    size: dict | str | None = None  # the size the figures are for (the problem's size constants, or its name)
    bound_ms: float | None = None  # the roofline bound at that size
    band: dict | None = None  # the speedup's range under the model's stated uncertainty

    @property
    def speedup(self) -> float | None:
        return self.reference_ms / self.kernel_ms if self.feasible and self.kernel_ms else None

    def to_json(self) -> dict:
        return {**asdict(self), "speedup": self.speedup}

    @classmethod
    def from_json(cls, data: dict) -> Prediction:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


# The launch limits are gpu_arch.py's (one table per compute capability); the fallbacks are for a user's GPU
# whose capability that table lacks.
def _max_threads_per_sm(target: Target) -> int:
    arch = gpu_arch.arch_of(target)
    return arch.max_threads_per_sm if arch else 1536


def _smem_per_block_bytes(target: Target) -> float:
    arch = gpu_arch.arch_of(target)
    return arch.max_shared_per_block if arch else ((target.shared_mem_per_sm_kb or 100.0) - 1.0) * 1024


def _bytes_per_ms(target: Target) -> float:
    return target.memory_bandwidth_gbs * 1e6


def _next_pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


def _saturation(target: Target, resident_threads: int, loads_per_thread: float) -> float:
    """Share of DRAM bandwidth reachable with this many threads each keeping a few 4-byte loads in flight."""
    needed = target.memory_bandwidth_gbs * 1e9 * MEMORY_LATENCY_S
    in_flight = resident_threads * min(max(loads_per_thread, 1.0), 8.0) * FP32
    return min(1.0, in_flight / needed)


def _residency(target: Target, threads: int, regs_per_thread: float, smem_bytes: float = 0.0) -> int:
    """Programs one SM holds at once, limited by threads, registers and shared memory."""
    by_threads = _max_threads_per_sm(target) // threads
    by_regs = int(REGISTERS_PER_SM // (min(regs_per_thread, 255) * threads))
    by_smem = int(((target.shared_mem_per_sm_kb or 100.0) * 1024) // smem_bytes) if smem_bytes else 32
    return max(0, min(by_threads, by_regs, by_smem, 32))


def _spill_factor(values_per_thread: float, notes: list[str]) -> float:
    if values_per_thread > 128:
        notes.append(f"{values_per_thread:.0f} values per thread: registers spill to local memory")
        return 0.35
    if values_per_thread > 64:
        notes.append(f"{values_per_thread:.0f} values per thread: register pressure")
        return 0.75
    return 1.0


# ---- the reference: eager PyTorch ---------------------------------------------------------------------
def reference_ms(target: Target, spec: OpSpec | None, work: dict) -> float:
    ops = (spec or {}).get("eager_ops") or []
    if not ops:  # unknown graph: one kernel at a typical efficiency
        return T.roofline_ms(target, work.get("flops", 0.0), work.get("bytes", 0.0), "float32") / 0.7 + LAUNCH_MS_EAGER
    total = 0.0
    for op in ops:
        moved = (op["in"] + op["out"]) * FP32
        if "flops" in op:
            compute = op["flops"] / (target.peak_tflops["fp32"] * 1e9 * EAGER_EFFICIENCY["gemm"])
            total += max(compute, moved / (_bytes_per_ms(target) * EAGER_EFFICIENCY["gemm"]))
        else:
            kind = "reduction" if op["op"] in REDUCTION_OPS else "elementwise"
            total += moved / (_bytes_per_ms(target) * EAGER_EFFICIENCY[kind])
        total += LAUNCH_MS_EAGER
    return total


# ---- template candidates ------------------------------------------------------------------------------
def _gemm_ms(target: Target, spec: OpSpec, p: dict, notes: list[str]) -> float | None:
    a = spec["attrs"]
    M, N, K, batch = a["M"], a["N"], a["K"], a.get("batch", 1)
    bm, bn, bk, warps, stages = p["BLOCK_M"], p["BLOCK_N"], p["BLOCK_K"], p["num_warps"], p["num_stages"]
    threads = warps * 32
    smem = stages * (bm * bk + bk * bn) * FP32
    if smem > _smem_per_block_bytes(target):
        notes.append(
            f"needs {smem / 1024:.0f} KiB of shared memory per block; {target.display_name} allows "
            f"{_smem_per_block_bytes(target) / 1024:.0f} KiB (Triton fails with OutOfResources)"
        )
        return None
    acc = bm * bn / threads
    efficiency = _spill_factor(acc, notes)
    if acc < 16:
        efficiency *= math.sqrt(acc / 16)  # too little work per thread to reuse operands from registers
        notes.append(f"{acc:.0f} accumulators per thread: little register reuse")
    resident = max(1, _residency(target, threads, acc + 40, smem))
    efficiency *= min(1.0, resident * warps / 8) ** 0.3  # latency hiding across warps
    efficiency *= {2: 0.8, 3: 0.92, 4: 0.97}.get(stages, 1.0)  # pipelining depth hides load latency
    tiles_m, tiles_n = math.ceil(M / bm), math.ceil(N / bn)
    tiles = tiles_m * tiles_n * batch
    efficiency *= tiles / (math.ceil(tiles / target.sms) * target.sms)  # last-wave quantisation
    padded = (tiles_m * bm) * (tiles_n * bn) * (math.ceil(K / bk) * bk) * batch
    if p["precision"] == "tf32x3":  # three TF32 tensor-core products per fp32 product
        peak, base = target.peak_tflops.get("tf32", target.peak_tflops["fp32"]) / 3, 0.75
    else:  # "ieee": fp32 FMA on the CUDA cores
        peak, base = target.peak_tflops["fp32"], 0.65
    peak = max(peak, target.peak_tflops["fp32"] * 0.5)
    compute_ms = 2 * padded / (peak * 1e9 * base * efficiency)
    # DRAM traffic: the tiles running at once share A rows and B columns through L2; GROUP_M shapes that set.
    a_bytes, b_bytes, c_bytes = batch * M * K * FP32, batch * K * N * FP32, batch * M * N * FP32
    if a_bytes + b_bytes <= 0.5 * (target.l2_mb or 0) * 2**20:
        traffic = a_bytes + b_bytes + c_bytes
    else:
        concurrent = min(tiles, target.sms * resident)
        group = min(p["GROUP_M"], tiles_m)
        if concurrent <= group * tiles_n:
            rows = min(group, concurrent)
            cols = math.ceil(concurrent / rows)
        else:
            rows, cols = math.ceil(concurrent / tiles_n), tiles_n
        per_wave = (rows * bm + cols * bn) * K * FP32
        traffic = max(a_bytes + b_bytes, tiles / concurrent * per_wave) + c_bytes
    memory_ms = traffic / (_bytes_per_ms(target) * STREAM_EFFICIENCY)
    notes.append("compute-bound" if compute_ms >= memory_ms else "memory-bound")
    return max(compute_ms, memory_ms)


def _rows_ms(target: Target, spec: OpSpec, p: dict, notes: list[str]) -> float | None:
    shape = spec["input_shapes"][spec["attrs"]["input"]]
    cols = int(shape[-1])
    rows = math.prod(int(d) for d in shape[:-1])
    one_pass = p["BLOCK_N"] == "row"
    block = _next_pow2(cols) if one_pass else p["BLOCK_N"]
    threads = p["num_warps"] * 32
    per_thread = block * p["ROWS"] / threads
    efficiency = _spill_factor(per_thread * (1 if spec["family"] == "reduce" else 2), notes)
    if per_thread < 4:
        efficiency *= 0.8
        notes.append(f"{per_thread:g} values per thread: no 128-bit loads")
    programs = math.ceil(rows / p["ROWS"])
    resident = max(1, _residency(target, threads, min(255, 2 * per_thread + 32)))
    slots = target.sms * resident
    efficiency *= _saturation(target, min(programs, slots) * threads, per_thread)
    efficiency *= programs / (math.ceil(programs / slots) * slots) if programs > slots else 1.0
    out_bytes = rows * FP32 if spec["family"] == "reduce" else rows * cols * FP32
    moved = rows * cols * FP32 + out_bytes
    if not one_pass:
        efficiency *= {1: 0.9, 2: 0.97}.get(p["num_stages"], 1.0)
        if spec["family"] != "reduce":  # statistics first, then a second read to normalise
            in_l2 = min(programs, slots) * p["ROWS"] * cols * FP32 <= 0.5 * (target.l2_mb or 0) * 2**20
            moved += rows * cols * FP32 * (0.3 if in_l2 else 1.0)
            notes.append("looped: the second read of each row " + ("hits L2" if in_l2 else "goes to DRAM"))
    return moved / (_bytes_per_ms(target) * STREAM_EFFICIENCY * efficiency)


def _elementwise_ms(target: Target, spec: OpSpec, p: dict, notes: list[str]) -> float | None:
    n = math.prod(int(d) for d in spec["output_shape"]) or 1
    full_operands = sum(1 for s in spec["attrs"]["chain"] if s.get("bcast") == "full")
    moved = (2 + full_operands) * n * FP32
    threads = p["num_warps"] * 32
    per_thread = p["BLOCK"] / threads
    efficiency = 0.8 if per_thread < 4 else 0.9 if per_thread > 32 else 1.0
    programs = math.ceil(n / p["BLOCK"])
    resident = max(1, _residency(target, threads, 32 + 2 * per_thread))
    efficiency *= _saturation(target, min(programs, target.sms * resident) * threads, per_thread)
    return moved / (_bytes_per_ms(target) * STREAM_EFFICIENCY * efficiency)


def predict(target: Target, spec: OpSpec | None, params: dict | None, work: dict) -> Prediction:
    """Predicted kernel and reference times for one candidate on `target` (a GPU)."""
    ref = reference_ms(target, spec, work)
    bound = T.roofline_ms(target, work.get("flops", 0.0), work.get("bytes", 0.0), work.get("dtype", "float32"))
    family = (spec or {}).get("family")
    notes: list[str] = []
    model = None
    if params and family in GEMM_FAMILIES:
        model = _gemm_ms
    elif params and family in ROW_FAMILIES:
        model = _rows_ms
    elif params and family == "elementwise":
        model = _elementwise_ms
    if model is None:
        notes.append("no parameters to model (hand-written candidate): assumed 60% of the roofline bound")
        return Prediction(bound / 0.6 + LAUNCH_MS_TRITON, ref, notes=notes)
    try:
        ms = model(target, spec, params, notes)
    except (KeyError, TypeError, ValueError) as exc:  # parameters this model does not know: say so, keep going
        notes.append(f"cannot model these parameters ({type(exc).__name__}: {exc}): assumed 60% of the bound")
        return Prediction(bound / 0.6 + LAUNCH_MS_TRITON, ref, notes=notes)
    if ms is None:
        return Prediction(None, ref, feasible=False, notes=notes)
    # A prediction is a time a real kernel could take: never below the roofline bound.
    return Prediction(max(ms, bound) + LAUNCH_MS_TRITON, ref, notes=notes)
