"""The records agentkern passes around, in one place. No torch here: the parent process never imports it.

Dataclasses for what stays in the process (Target, EvalOptions, EvalResult); TypedDicts for the records that
are stored or checkpointed (Draft, Verdict, Candidate, OpSpec, ...): at run time they are plain dicts, so
LangGraph's SQLite checkpointer and the run store keep them as JSON. (No `from __future__ import
annotations` here: it would hide NotRequired from the TypedDicts' __required_keys__.)
"""

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, NotRequired, Required, TypedDict, get_args

# The verdicts `agentkern eval --json` may give. CI jobs switch on these: keep them stable.
# "unverified": built but could not be run here (a CUDA kernel on a machine without a GPU).
# "suspicious": outputs matched, but its time beats the roofline bound by more than the margin, after the
# host's figures were measured again (harness/roofline_check.py): not a result, never counted as correct.
Status = Literal[
    "ok", "incorrect", "compile_error", "runtime_error", "timeout", "crashed", "rejected", "unverified", "suspicious"
]
STATUSES: tuple[Status, ...] = get_args(Status)
# A candidate's status: a harness verdict, or "no_code" (the coder produced no file to evaluate) or
# "infeasible" (correct in the interpreter, but the cost model says it would not launch on the target GPU).
CandidateStatus = Literal[Status, "no_code", "infeasible"]
CANDIDATE_STATUSES: tuple[CandidateStatus, ...] = get_args(CandidateStatus)
Backend = str  # a name in agentkern.backends.names() (one module each), or "torch": no kernel of its own
TimingMode = Literal["offline", "server"]

# What the built-in recogniser names a problem (OpSpec "family"): one template family each
# (policies/builtin/templates.py), and the groups the cost model (targets/costmodel.py) prices alike.
Family = Literal[
    "softmax",
    "log_softmax",
    "layernorm",
    "rmsnorm",
    "reduce",
    "elementwise",
    "matmul",
    "linear",
    "bmm",
    "attention",
    "graph",  # the whole traced graph, op by op (policies/builtin/graph_trace.py); C++ only, no cost model
]
FAMILIES: tuple[Family, ...] = get_args(Family)
GEMM_FAMILIES: tuple[Family, ...] = ("matmul", "linear", "bmm")
ROW_FAMILIES: tuple[Family, ...] = ("softmax", "log_softmax", "layernorm", "rmsnorm", "reduce")
# torch's dtype names -> the short ones of Target.peak_tflops keys and of messages.
DTYPE_SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}


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
    trials: int = 9  # every input transform of harness/inputs.py runs once (trials_for_every_transform)
    # A second shape (harness/second_shape.py): "report" says in details.second_shape when the kernel is wrong
    # there (a shape-specialised kernel, as the built-in templates are), "require" makes that incorrect, "off".
    second_shape: str = "report"
    seed: int | None = None  # None: fresh random seeds per evaluation (recorded in details)
    # Tolerances per dtype; atol and rtol both take this value (KernelBench convention).
    tolerances: dict[str, float] = field(
        default_factory=lambda: {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2, "float64": 1e-7}
    )
    mode: TimingMode = "offline"
    time_budget_s: float = 0.5  # for all timed calls, both sides together
    min_timed_calls: int = 5
    max_timed_calls: int = 200  # blocks of ~20 ms (harness/timing.py), several of them, where memory allows
    compile_timeout_s: float = 300.0
    run_timeout_s: float = 120.0
    memory_limit_gb: float = 8.0
    # Largest file the worker (and its compilers, its log included) may write, in MiB: a candidate printing
    # gigabytes is killed (SIGXFSZ) instead of filling the disk. Builds and caches stay far below it.
    output_limit_mb: float = 1024.0
    threads: int | None = None  # None: all cores; the reference and the kernel get the same count
    check_timing: bool = True
    # Measurements at most while other programs keep the host's CPUs busy (harness/host_load.py): each one after
    # the first waits a little first; the quietest is kept and flagged if still busy. 1: measured once, flagged.
    busy_host_attempts: int = 3
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

    def to_json(self) -> "Verdict":
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


# ---- records of the optimisation loop (agentkern/loop/) -------------------------------------------------


class Verdict(TypedDict):
    """EvalResult.to_json(): the harness's verdict on one candidate, as stored and checkpointed. The
    compiler node gives a draft without code a verdict of its own ("no_code", no timings)."""

    status: CandidateStatus
    correct: bool
    speedup: NotRequired[float | None]
    reference_ms: NotRequired[float | None]
    kernel_ms: NotRequired[float | None]
    roofline_fraction: NotRequired[float | None]
    error: str | None
    details: dict[str, Any]  # timing, bound, work, roofline_bound_ms, suspicious, roofline_check, rejected_because, ...


class Draft(TypedDict):
    """A candidate before evaluation: what Policy.write() returns, stamped by the coder node with `id` and
    `iteration` (it takes `tokens` and `cost_usd` off into the run's totals)."""

    strategy: str  # "family:<algorithm>/<tiling>" (the built-in policy) or "<planner's strategy>/<j>" (an LLM's)
    params: dict[str, Any]  # the template's parameters; {} for a hand-written (LLM) candidate
    parent: str | None  # the candidate it was derived from
    reply_form: NotRequired[str | None]  # an LLM's reply: "file" (a whole file) or "diff" (against the parent)
    other_parent: NotRequired[str]  # a crossover's second parent (policies/lineage.py)
    # The solution file; None when the coder has none (then `error` says why). Left out of the copies in the
    # compiler's results and the run store's steps: the code is in the candidate's file.
    source: NotRequired[str | None]
    error: str | None
    id: NotRequired[str]  # "ITERATION-INDEX", e.g. "003-1"
    iteration: NotRequired[int]
    tokens: NotRequired[int]
    cost_usd: NotRequired[float]


class EvaluatedDraft(TypedDict):
    """The compiler node's result for one draft: the draft (without its source), its file and its verdict."""

    draft: Draft
    path: str | None  # None for a draft without code
    verdict: Verdict


class VerdictSummary(TypedDict, total=False):
    """The part of a verdict a candidate record keeps, and the cost model's prediction when there is one."""

    status: CandidateStatus
    rejected_because: str | None
    suspicious: Any
    timing_unavailable: str | None
    prediction: dict[str, Any]  # costmodel.Prediction.to_json()
    compiled: str  # the kernels' resources on the target (harness/triton_compile.py, cubin.py), one line each


class CandidateRecord(TypedDict):
    """What a candidate record has wherever it is read: in the run's state and as stored."""

    id: str
    iteration: int
    strategy: str
    params: dict[str, Any]
    parent: str | None
    path: str | None
    status: CandidateStatus
    correct: bool  # the harness said correct and nothing about it was suspicious
    speedup: float | None  # reference_ms / kernel_ms: measured, or predicted when `predicted`
    kernel_ms: float | None
    reference_ms: float | None
    roofline_fraction: float | None
    predicted: bool  # the times come from the cost model: the target GPU was not here
    error: str | None
    verdict: VerdictSummary


class Candidate(CandidateRecord):
    """An evaluated candidate, as the profiler node records it (state "candidates", the run store)."""

    bound: str | None  # "memory" | "compute"
    counters: NotRequired[dict[str, Any]]  # perf/ncu counters, for a candidate that beat the best so far
    # A failure's compiler log or correctness report, trimmed (policies/lineage.report_of): the next prompt's
    report: NotRequired[str]


class StoredCandidate(CandidateRecord):
    """A candidate as read back from the run store (agentkern.traces): the record's stored columns, the row's
    own, and the harness's evidence (agentkern.traces.evidence)."""

    run_id: str
    candidate_id: str
    ts: float
    source: str | None
    compile_log: str | None
    correctness: dict[str, Any] | None
    timing: dict[str, Any] | None


class Elite(TypedDict):
    """A strategy family's best candidate, in the few fields the planner and critic see."""

    id: str
    strategy: str
    params: dict[str, Any]
    speedup: float
    roofline_fraction: float | None


class Plan(TypedDict, total=False):
    """What Policy.plan() returns; the coder reads it back."""

    summary: Required[str]  # one line, for the run store and the live view
    # the built-in policy: the parent whose neighbours the coder proposes, and the search stage
    parent: str | None
    parent_params: dict[str, Any]
    stage: int
    # an LLM policy: the planner's reply and the strategy named in it, and what the call cost
    strategy: str
    text: str
    ideas: list[dict[str, str]]  # {strategy, text}: one per branch of the beam, taken in turn
    parents: list[str | None]  # the branches' parents (policies/lineage.py), for the trace
    start: bool  # the first iteration's kernel comes from --start-from, not from the model
    tokens: int
    cost_usd: float


class BestKernel(TypedDict):
    """The best kernel of a run, as `agentkern optimize --json` gives it."""

    correct: bool
    speedup: float  # as timed again once the search stopped, when it was (RunResult.confirmation)
    search_speedup: float  # the search's own timing of it
    kernel_ms: float | None
    reference_ms: float | None
    path: str  # where best_<problem>.py was written
    strategy: str
    candidate: str  # its candidate id
    roofline_fraction: float | None
    predicted: bool  # True: the target GPU was not here; the figures come from the cost model
    predicted_size: dict | str | None  # the size those predicted figures are for (size constants), else None


class RunResult(TypedDict):
    """What an optimisation run returns (loop/run.py), printed by `agentkern optimize --json`: a stable
    contract that CI jobs read (docs/optimize.md)."""

    run_id: str
    best: BestKernel | None
    iterations: int
    candidates: int
    correct_candidates: int
    speedup_history: list[float]  # speedup@k after each iteration
    stopped_because: str
    tokens: int
    cost_usd: float
    # Points of speedup (0.01x each) from the first correct kernel to the best, and what each point cost
    speedup_points: float
    tokens_per_point: float | None
    cost_per_point_usd: float | None
    # The template parameters the search chose, against the run's start, with the measured candidate that
    # argues for each changed value (loop/winning_params.py); None for hand-written (LLM) kernels.
    params_won: dict[str, Any] | None
    # The search's best candidates timed again with a longer budget, the winner among them by those timings
    # (loop/nodes/confirm.py): {"budget_s", "rows": [{candidate, search_speedup, status, speedup, ...}],
    # "winner"}; None when not confirmed (--confirm-budget 0, predicted figures, no correct candidate).
    confirmation: dict[str, Any] | None
    target: str
    backend: str
    problem: str
    size: str | None


# One kernel eager PyTorch launches for the reference: its op, elements read ("in", a keyword: hence this
# spelling) and written, and a GEMM's flops.
EagerOp = TypedDict("EagerOp", {"op": str, "in": int, "out": int, "flops": NotRequired[int]})


class OpSpec(TypedDict):
    """What a problem computes, as the built-in recogniser (policies/builtin/recognize.py) sees it: the input
    of the templates (templates.render) and of the cost model (targets/costmodel.py). `family` is None when
    the problem is not understood, and `reason` says why."""

    family: Family | None
    reason: str | None
    dtype: str | None  # "float32", "float16", ...: the inputs' floating dtype
    input_shapes: list[list[int] | None]
    output_shape: list[int] | None
    init_args: list[Any]
    attrs: dict[str, Any]  # the family's: softmax {input, scale}, gemm {a, b, M, N, K, batch}, ...
    epilogue: list[dict[str, Any]]  # elementwise steps after the core op: {op, scalar | input | param, ...}
    param_paths: dict[str, str]  # a template's parameter name -> the Model's attribute path
    model_source: str  # the reference's Model, renamed, for a solution to rebuild identical parameters
    frontend: str | None  # "fx" | "dispatch": which trace understood it
    size: str | None  # the problem size it was analysed at (agentkern/sizes.py)
    eager_ops: NotRequired[list[EagerOp]]  # for a recognised problem only
