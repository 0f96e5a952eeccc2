"""Plain dataclasses shared across agentkern. No torch here: the parent process never imports it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# The verdicts `agentkern eval --json` may give. CI jobs switch on these: keep them stable.
# "unverified": built but could not be run here (a CUDA kernel on a machine without a GPU).
STATUSES = (
    "ok",
    "incorrect",
    "compile_error",
    "runtime_error",
    "timeout",
    "crashed",
    "rejected",
    "unverified",
)
Status = Literal["ok", "incorrect", "compile_error", "runtime_error", "timeout", "crashed", "rejected", "unverified"]
Backend = Literal["cpp", "triton", "cuda", "torch"]
TimingMode = Literal["offline", "server"]


@dataclass(frozen=True)
class Target:
    """A piece of hardware kernels are written for, with the published figures a roofline needs."""

    name: str  # "a100", "cpu", ...
    kind: Literal["cpu", "gpu"]
    display_name: str
    # Dense peak throughput in TFLOP/s per dtype ("fp32", "tf32", "fp16", "bf16", "fp8", "fp64").
    peak_tflops: dict[str, float]
    memory_bandwidth_gbs: float
    memory_gb: float | None = None
    sms: int | None = None  # GPU streaming multiprocessors
    cores: int | None = None  # CPU cores
    simd_width_bits: int | None = None
    shared_mem_per_sm_kb: float | None = None
    l2_mb: float | None = None
    l3_mb: float | None = None
    compute_capability: str | None = None
    # Where each figure comes from: figure name -> URL, or "measured on this host ..."
    sources: dict[str, str] = field(default_factory=dict)
    notes: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class EvalOptions:
    trials: int = 5
    seed: int | None = None  # None: fresh random seeds per evaluation (recorded in details)
    # Tolerances per dtype; atol and rtol both take this value (KernelBench convention).
    tolerances: dict[str, float] = field(
        default_factory=lambda: {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2, "float64": 1e-7}
    )
    mode: TimingMode = "offline"
    time_budget_s: float = 0.5  # for all timed calls, both sides together
    min_timed_calls: int = 5
    max_timed_calls: int = 50
    compile_timeout_s: float = 300.0
    run_timeout_s: float = 120.0
    memory_limit_gb: float = 8.0
    threads: int | None = None  # None: all cores; the reference and the kernel get the same count
    check_timing: bool = True
    # Problem size (agentkern/sizes.py): "cpu" or "gpu" picks the problem's SIZES entry; None: the target
    # picks ("cpu" on a CPU, "gpu" on a GPU that is present, "cpu" for a GPU that is not).
    size: str | None = None


@dataclass
class EvalResult:
    """The harness's verdict on one candidate. The top-level keys of to_json() are a stable contract."""

    status: Status
    correct: bool
    speedup: float | None = None
    reference_ms: float | None = None
    kernel_ms: float | None = None
    roofline_fraction: float | None = None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "correct": self.correct,
            "speedup": self.speedup,
            "reference_ms": self.reference_ms,
            "kernel_ms": self.kernel_ms,
            "roofline_fraction": self.roofline_fraction,
            "error": self.error,
            "details": self.details,
        }
