"""What the harness said about one candidate, split into the three things a reader of a trace asks for: what
did the build print, was it correct (and how was that checked), how fast was it. Stored with the candidate
(run store migration 2) so `agentkern traces` and any SQLite tool can read them without the run folder.
"""

from __future__ import annotations

from pathlib import Path

from agentkern.types import Verdict

# Keys of the verdict's `details` that belong to the correctness check, and to the timing.
CORRECTNESS_KEYS = (
    "trials",
    "seeds",
    "max_abs_diff",
    "failed_trial",
    "reference_ops",
    "candidate_ops",
    "rejected_because",
    "suspicious",
    "outputs_matched",
    "size",
    "threads",
    "device",
)
TIMING_KEYS = (
    "timing",
    "phases",
    "roofline_bound_ms",
    "bound",
    "roofline_check",
    "work",
    "wall_s",
    "warm_worker",
    "timed_op_watch",  # what watched the candidate's torch ops while it was timed (harness/op_observer.py)
)
# Where the build's and the worker's output end up, in the order a reader wants them.
LOG_KEYS = (("nvcc_log", "nvcc"), ("traceback", "traceback"), ("log_tail", "worker output"))


def from_verdict(verdict: Verdict, path: str | None) -> dict:
    """{source, compile_log, correctness, timing} for store.candidate(); missing parts are None."""
    details = verdict.get("details") or {}
    return {
        "source": _read(path),
        "compile_log": compile_log(verdict),
        "correctness": {
            "correct": bool(verdict.get("correct")),
            "status": verdict.get("status"),
            "error": verdict.get("error"),
            **{k: details[k] for k in CORRECTNESS_KEYS if details.get(k) is not None},
        },
        "timing": {
            "kernel_ms": verdict.get("kernel_ms"),
            "reference_ms": verdict.get("reference_ms"),
            "speedup": verdict.get("speedup"),
            **{k: details[k] for k in TIMING_KEYS if details.get(k) is not None},
        },
    }


def compile_log(verdict: Verdict) -> str | None:
    """The compiler's and the worker's output as one text; None when there is nothing to read (a candidate
    that built quietly: the harness keeps logs only for failures)."""
    details = verdict.get("details") or {}
    parts = [f"== {title} ==\n{details[key].rstrip()}" for key, title in LOG_KEYS if details.get(key)]
    if verdict.get("status") not in (None, "ok") and verdict.get("error"):
        parts.insert(0, f"== error ==\n{verdict['error']}")
    return "\n\n".join(parts) or None


def _read(path: str | None) -> str | None:
    if not path:
        return None
    try:
        return Path(path).read_text()
    except OSError:
        return None
