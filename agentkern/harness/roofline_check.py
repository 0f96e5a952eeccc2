"""The roofline check on a verdict: a kernel faster than the hardware allows is named, never silently rejected.

`add_roofline` puts the bound on every timed verdict (details.roofline_bound_ms, details.bound,
roofline_fraction). When an `ok` kernel beats the bound by more than the margin (targets.ROOFLINE_MARGIN), the
bound itself is the first suspect on a CPU: its bandwidths and peak are measured on this host, and a
measurement taken while the machine was busy is too slow. So the host is measured again, under the CPU's
timing lock with a bounded wait (targets/host.py remeasure_host; the cache keeps the fastest figures), and the
bound recomputed. A kernel that still beats it gets status `suspicious`: correct False, the reason in `error`
and details.suspicious, and every figure of the check in details.roofline_check. A GPU target's figures are
published, not measured: nothing is re-measured there.

This runs in agentkern's own process, after the worker has gone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentkern import targets as T
from agentkern.types import EvalResult, Target

# How long a re-measurement waits for the CPU's timing lock (another worker timing a candidate) before giving up.
LOCK_WAIT_S = 30.0


def add_roofline(
    result: EvalResult,
    target: Target,
    remeasure: Callable[[], dict[str, Any]] | None = None,
    retime: Callable[[], EvalResult] | None = None,
) -> None:
    """The bound on `result` (from details.work), and the check of an `ok` result that beats it. `remeasure`:
    the host re-measurement (default: targets.remeasure_host with LOCK_WAIT_S), replaceable in tests; `retime`:
    the whole evaluation once more, for a kernel still beyond the re-measured bound (None: not re-timed)."""
    work = result.details.get("work")
    if not work:
        return
    bound_ms = _apply_bound(result, target, work)
    if result.status == "ok" and T.beyond_roofline(result.kernel_ms, bound_ms):
        _recheck(result, target, work, bound_ms, remeasure)
        if result.status == "suspicious" and retime is not None:
            _retimed(result, target, work, retime)


def _retimed(result: EvalResult, target: Target, work: dict, retime: Callable[[], EvalResult]) -> None:
    """Time the kernel again in a fresh evaluation: a measurement that went wrong once (a stall of the
    reference, a clock step) does not go wrong the same way twice; a kernel that really beats the bound does."""
    check = result.details["roofline_check"]
    again = retime()
    check["retimed"] = {"status": again.status, "kernel_ms": again.kernel_ms, "reference_ms": again.reference_ms}
    bound_ms = check["bound_ms"]
    if again.status != "ok" or T.beyond_roofline(again.kernel_ms, bound_ms):
        check["outcome"] = "suspicious (timed twice)"
        result.error = result.error.replace(": a timing error", ", and again when timed a second time: a timing error")
        return
    check["outcome"] = "within the bound when the kernel was timed again"
    result.status, result.correct, result.error = "ok", True, None
    result.kernel_ms, result.reference_ms, result.speedup = again.kernel_ms, again.reference_ms, again.speedup
    result.details["timing"] = again.details.get("timing")
    result.details.pop("suspicious", None)
    result.details.pop("outputs_matched", None)
    _apply_bound(result, target, work)


def _apply_bound(result: EvalResult, target: Target, work: dict) -> float:
    bound_ms = T.roofline_ms(target, work["flops"], work["bytes"], work["dtype"])
    result.details["roofline_bound_ms"] = bound_ms
    result.details["bound"] = bound_kind(target, work)
    if result.kernel_ms and bound_ms > 0:
        result.roofline_fraction = bound_ms / result.kernel_ms
    return bound_ms


def bound_kind(target: Target, work: dict) -> str:
    compute_ms = T.roofline_ms(target, work["flops"], 0.0, work["dtype"])
    memory_ms = T.roofline_ms(target, 0.0, work["bytes"], work["dtype"])
    return "compute" if compute_ms >= memory_ms else "memory"


def _recheck(result: EvalResult, target: Target, work: dict, first_bound_ms: float, remeasure: Callable | None) -> None:
    margin = T.ROOFLINE_MARGIN
    check: dict[str, Any] = {
        "kernel_ms": result.kernel_ms,
        "margin": margin,
        "first_bound_ms": first_bound_ms,
        "first_figures": _figures(target),
    }
    bound_ms = first_bound_ms
    if target.kind == "cpu":
        check["remeasured"] = (remeasure or (lambda: T.remeasure_host(LOCK_WAIT_S)))()
        if "after" in check["remeasured"]:
            target = T.cpu_target()  # built from the cache, which now holds the fastest figures
            bound_ms = _apply_bound(result, target, work)
    else:
        check["remeasured"] = {"skipped": f"{target.name}: published figures, nothing to measure"}
    check["bound_ms"] = bound_ms
    check["figures"] = _figures(target)
    check["limit_ms"] = bound_ms * (1 - margin)
    result.details["roofline_check"] = check
    if not T.beyond_roofline(result.kernel_ms, bound_ms):
        check["outcome"] = "within the bound once the host was measured again"
        return
    check["outcome"] = "suspicious"
    why = (
        f"{result.kernel_ms:.4g} ms beats the {target.name} roofline bound of {bound_ms:.4g} ms "
        f"({result.details.get('bound', '?')}-bound) by more than the {margin:.0%} margin"
    )
    remeasured = check["remeasured"]
    if "after" in remeasured:
        why += f" (bound recomputed after measuring the host again: first {first_bound_ms:.4g} ms)"
    elif target.kind == "cpu":
        why += f" (host not measured again: {remeasured.get('skipped', '?')})"
    result.details["suspicious"] = why
    result.details["outputs_matched"] = result.correct
    result.status = "suspicious"
    result.correct = False
    result.error = f"{why}: a timing error or a cheat, not a result"


def _figures(target: Target) -> dict[str, Any]:
    figures: dict[str, Any] = {"memory_bandwidth_gbs": target.memory_bandwidth_gbs, "peak_tflops": target.peak_tflops}
    if target.kind == "cpu":
        figures["cache_bandwidth_gbs"] = T.cpu_cache_bandwidth_gbs()
    return figures
