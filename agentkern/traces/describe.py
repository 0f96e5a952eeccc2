"""Plain-text descriptions of a candidate's verdict, correctness report and timing, shared by the terminal
views and the HTML report so both say the same thing the same way."""

from __future__ import annotations

from agentkern.harness import core_link, host_load
from agentkern.types import BestKernel, CandidateRecord, StoredCandidate

# A kernel whose mean time is more than this many times its median had outliers while it was timed (another
# process, a frequency change): the speedup, from the medians, stands, but the machine was not quiet.
NOISY_MEAN_OVER_MEDIAN = 1.5


def noise_note(candidate: StoredCandidate | None) -> str | None:
    """ "noisy timing: ..." when a side's mean time exceeds NOISY_MEAN_OVER_MEDIAN times its median, and what
    the host's load says (harness/host_load.py: busy while timed, or timed again), else None."""
    stats = ((candidate or {}).get("timing") or {}).get("timing") or {}
    ratios = {}
    for side in ("kernel", "reference"):
        s = stats.get(side) or {}
        if s.get("median_ms") and s.get("mean_ms") and s["mean_ms"] > NOISY_MEAN_OVER_MEDIAN * s["median_ms"]:
            ratios[side] = s["mean_ms"] / s["median_ms"]
    notes = []
    if ratios:
        what = ", ".join(f"the {side}'s mean time is {ratio:.1f}x its median" for side, ratio in ratios.items())
        notes.append(
            f"noisy timing: {what} (flagged above {NOISY_MEAN_OVER_MEDIAN:g}x): outliers while timing; "
            "re-time it on a quiet machine (agentkern eval)"
        )
    load_note = host_load.note(stats.get("host_load"))
    if load_note:
        notes.append(load_note)
    cores_note = core_link.note(stats.get("cores"))
    if cores_note:
        notes.append(cores_note)
    return "; ".join(notes) or None


def beats_reference(best: CandidateRecord | BestKernel | None) -> bool:
    """Whether the best kernel is faster than the reference (predicted so, for a GPU that is not here)."""
    return bool(best) and best.get("speedup") is not None and best["speedup"] > 1.0


def speedup_text(candidate: CandidateRecord | None) -> str:
    """ "1.23x", "1.23x predicted", or the status of a candidate without a speedup."""
    if candidate is None:
        return "-"
    if candidate.get("correct") and candidate.get("speedup") is not None:
        return f"{candidate['speedup']:.2f}x" + (" predicted" if candidate.get("predicted") else "")
    return candidate.get("status") or "-"


def correctness_lines(candidate: StoredCandidate) -> list[str]:
    """The correctness report: the stored one (run store migration 2), else what the verdict column kept."""
    report = candidate.get("correctness") or {}
    verdict = candidate.get("verdict") or {}
    lines = [f"correct: {'yes' if candidate.get('correct') else 'no'} (status {candidate.get('status')})"]
    if report.get("trials") is not None:
        seeds = report.get("seeds") or []
        lines.append(
            f"trials: {report['trials']}"
            + (f", seeds {', '.join(map(str, seeds))}" if seeds else "")
            + (f", max |diff| {report['max_abs_diff']:.3g}" if report.get("max_abs_diff") is not None else "")
        )
    if report.get("failed_trial"):
        failed = report["failed_trial"]
        lines.append(f"failed at trial {failed.get('trial')} (seed {failed.get('seed')})")
    for key, label in (("reference_ops", "reference ops"), ("candidate_ops", "candidate ops")):
        if report.get(key):
            lines.append(f"{label}: {', '.join(report[key])}")
    for key, label in (("rejected_because", "rejected because"), ("suspicious", "suspicious")):
        value = report.get(key) or verdict.get(key)
        if value:
            lines.append(f"{label}: {value}")
    error = report.get("error") or candidate.get("error")
    if error and not candidate.get("correct"):
        lines.append(f"error: {error}")
    if report.get("device") or report.get("threads"):
        lines.append(
            f"device: {report.get('device', '?')}"
            + (f", {report['threads']} threads" if report.get("threads") else "")
            + (f", size {report['size']}" if report.get("size") else "")
        )
    return lines


def timing_lines(candidate: StoredCandidate) -> list[str]:
    """Speedup and times, the timing statistics of both sides, the roofline and the harness's phases."""
    timing = candidate.get("timing") or {}
    lines = []
    if candidate.get("kernel_ms") is not None:
        kind = "predicted by the cost model" if candidate.get("predicted") else "measured"
        lines.append(
            f"{speedup_text(candidate)}: kernel {candidate['kernel_ms']:.4g} ms vs reference "
            f"{candidate['reference_ms']:.4g} ms ({kind})"
        )
    stats = timing.get("timing") or {}
    for side in ("kernel", "reference"):
        s = stats.get(side)
        if s:
            lines.append(
                f"{side:<9} median {s['median_ms']:.4g} ms, min {s['min_ms']:.4g}, p10 {s['p10_ms']:.4g}, "
                f"p90 {s['p90_ms']:.4g}, mean {s['mean_ms']:.4g} +- {s['stdev_ms']:.3g} ({s['calls']} calls)"
            )
    if noise_note(candidate):
        lines.append(noise_note(candidate))
    load_line = host_load.line(stats.get("host_load"))
    if load_line:
        lines.append(load_line)
    cores_line = core_link.line(stats.get("cores"))
    if cores_line:
        lines.append(cores_line)
    if stats.get("mode"):
        lines.append(f"mode: {stats['mode']}")
    if stats.get("unavailable"):
        lines.append(f"not timed here: {stats['unavailable']}")
    if timing.get("roofline_bound_ms") is not None:
        fraction = candidate.get("roofline_fraction")
        lines.append(
            f"roofline bound {timing['roofline_bound_ms']:.4g} ms ({timing.get('bound', '?')}-bound)"
            + (f", {fraction:.1%} of it reached" if fraction else "")
        )
    if timing.get("roofline_check"):
        lines.append(f"roofline check: {remeasure_line(timing['roofline_check'])}")
    phases = timing.get("phases") or {}
    if phases:
        lines.append("phases: " + ", ".join(f"{k.removesuffix('_s')} {v:.2f} s" for k, v in phases.items()))
    prediction = (candidate.get("verdict") or {}).get("prediction") or {}
    if prediction.get("notes"):
        lines.append("cost model: " + "; ".join(prediction["notes"]))
    return lines or ["no timing (the candidate did not pass)"]


def counters_lines(counters: dict) -> list[str]:
    if not counters.get("available"):
        return [f"hardware counters unavailable: {counters.get('why', '?')}"]
    lines = [
        f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}" for k, v in (counters.get("values") or {}).items()
    ]
    if counters.get("top_stalls"):
        lines.append("top stalls: " + ", ".join(s["reason"] for s in counters["top_stalls"]))
    if counters.get("note"):
        lines.append(f"note: {counters['note']}")
    return lines


def remeasure_line(check: dict) -> str:
    """What the roofline check did (details.roofline_check, harness/roofline_check.py), in one line."""
    again = check.get("remeasured") or {}
    head = (
        f"kernel {check.get('kernel_ms', 0):.4g} ms, bound {check.get('first_bound_ms', 0):.4g} ms"
        f" -> {check.get('bound_ms', 0):.4g} ms, margin {check.get('margin', 0):.0%}"
    )
    if "after" in again:
        before, now = again.get("before") or {}, again["after"]
        figures = ", ".join(
            f"{label} {before.get(key, '?')} -> {now[key]}"
            for key, label in (
                ("dram_gbs", "DRAM GB/s"),
                ("cache_gbs", "cache GB/s"),
                ("matmul_tflops", "matmul TFLOP/s"),
                ("fma_tflops", "FMA TFLOP/s"),
            )
            if key in now
        )
        return f"{head}; host measured again: {figures}; {check.get('outcome', '')}"
    return f"{head}; host not measured again: {again.get('skipped', '?')}; {check.get('outcome', '')}"
