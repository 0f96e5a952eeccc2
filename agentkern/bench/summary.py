"""The bench report: one JSON object (CI reads it; keys are stable) and a Markdown table (people read it).

{"suite", "target", "options", "metrics": {fast_0, fast_1, fast_1_5, fast_2, pass_at_k, speedup_at_k,
 geomean_speedup, k, baseline, problems, solved}, "predicted", "problems": [{name, status, reason,
 speedup_eager, speedup_compile, roofline_fraction, kernel_path, candidates, correct_candidates,
 suspicious_candidates, run_id, ...}]}
"""

from __future__ import annotations

import dataclasses
import time

from agentkern.bench.metrics import suite_metrics

ROW_KEYS = (
    "name",
    "status",
    "reason",
    "speedup_eager",
    "speedup_compile",
    "roofline_fraction",
    "kernel_path",
    "candidates",
    "correct_candidates",
    "suspicious_candidates",
    "busy_host_timings",
    "run_id",
)


def build_report(suite_name: str, target: str, opts, rows: list[dict], measured_on: str | None = None) -> dict:
    """measured_on: the machine the times come from (a CPU's model, ISA, cores and caches; a GPU's name), or
    None when they were predicted: figures from two reports compare only where it is the same."""
    options = dataclasses.asdict(opts) if dataclasses.is_dataclass(opts) else dict(opts)
    return {
        "suite": suite_name,
        "target": target,
        "measured_on": measured_on,
        "options": options,
        "metrics": suite_metrics(rows, options.get("k", 1), options.get("baseline", "eager")),
        # True when some speedups were predicted by the cost model (the target GPU was not here)
        "predicted": any(r.get("predicted") for r in rows),
        "core_round_trip_ns": _round_trips(rows),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "problems": rows,
    }


def _round_trips(rows: list[dict]) -> list[float] | None:
    """[least, most] round trip of a cache line between the cores over the whole run (harness/core_link.py)."""
    trips = [t for r in rows for t in r.get("core_round_trip_ns") or []]
    return [min(trips), max(trips)] if trips else None


def _cores_line(trips: list[float] | None) -> list[str]:
    if not trips:
        return []
    from agentkern.harness.core_link import MOVED_RATIO

    line = f"A cache line's round trip between the cores took {trips[0]:.0f}-{trips[1]:.0f} ns over the run's timings"
    if trips[1] > MOVED_RATIO * trips[0]:
        line += (
            ": the host moved the cores between placements (sharing a cache and not), and kernels that share data "
            "between cores run at a different speed in each (docs/harness.md, Timing)"
        )
    return ["", line + "."]


def _x(value) -> str:
    return "" if value is None else f"{value:.2f}x"


def _num(value) -> str:
    return "" if value is None else f"{value:.2f}"


def _pct(value) -> str:
    return "" if value is None or value is True else f"{value:.0%}"


def _cell(text) -> str:
    return "" if text is None else str(text).replace("|", "\\|").replace("\n", " ")


def progress_line(i: int, total: int, row: dict) -> str:
    """One plain line per finished problem (stderr), so a long suite shows where it is."""
    head = f"[{i}/{total}] {row['name']}: {row['status']}"
    if row["status"] == "ok":
        star = "*" if row.get("predicted") else ""
        parts = [f"{_x(row['speedup_eager'])}{star} vs eager"]
        if row.get("speedup_compile") is not None:
            parts.append(f"{_x(row['speedup_compile'])} vs torch.compile")
        if row.get("roofline_fraction"):
            parts.append(f"{row['roofline_fraction']:.0%} of roofline")
        head += " " + ", ".join(parts)
    elif row.get("reason"):
        head += f": {row['reason']}"
    busy = row.get("busy_host_timings") or 0
    return (
        head
        + f" ({row['candidates']} candidates, {row.get('wall_s') or 0:.0f} s"
        + (f"; {busy} timed on a busy host" if busy else "")
        + ")"
    )


def _suspicious(row: dict) -> str:
    n = row.get("suspicious_candidates") or 0
    return f" ({n} suspicious)" if n else ""


def markdown(report: dict) -> str:
    m = report["metrics"]
    lines = [
        f"## agentkern bench {report['suite']} on {report['target']}",
        "",
        *([f"Measured on {report['measured_on']}.", ""] if report.get("measured_on") else []),
        "| problem | status | vs eager | vs torch.compile | of roofline | correct / candidates | kernel or reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report["problems"]:
        star = "*" if r.get("predicted") else ""
        what = r["kernel_path"] if r["status"] == "ok" else r.get("reason")
        if r["status"] == "ok" and r.get("compile_note") and r.get("speedup_compile") is None:
            what = f"{what} ({r['compile_note']})"
        lines.append(
            f"| {_cell(r['name'])} | {r['status']} | {_x(r['speedup_eager'])}{star if r['speedup_eager'] else ''} | "
            f"{_x(r['speedup_compile'])} | {_pct(r['roofline_fraction'])} | "
            f"{r['correct_candidates']} / {r['candidates']}{_suspicious(r)} | {_cell(what)} |"
        )
    k = m["k"]
    lines += [
        "",
        f"Metrics over {m['problems']} problems (speedups vs {'torch.compile' if m['baseline'] == 'compile' else 'eager PyTorch'}):",
        "",
        f"| fast_0 | fast_1 | fast_1.5 | fast_2 | pass@{k} | speedup@{k} | geomean speedup |",
        "|---|---|---|---|---|---|---|",
        f"| {_pct(m['fast_0'])} | {_pct(m['fast_1'])} | {_pct(m['fast_1_5'])} | {_pct(m['fast_2'])} | "
        f"{_num(m['pass_at_k'])} | {_x(m['speedup_at_k'])} | {_x(m['geomean_speedup'])} |",
    ]
    if report.get("predicted"):
        lines += ["", "* predicted by the cost model, not measured: the target GPU was not on this machine."]
    lines += _cores_line(report.get("core_round_trip_ns"))
    busy = {r["name"]: r["busy_host_timings"] for r in report["problems"] if r.get("busy_host_timings")}
    if busy:
        lines += [
            "",
            f"Timed while other programs kept the host busy, even after the judge's attempts: {sum(busy.values())} "
            f"timings, in {', '.join(f'{name} ({n})' for name, n in busy.items())}. Their speedups are the machine's as "
            "much as the kernels'; run those problems again on a quiet machine (`--only NAME`).",
        ]
    return "\n".join(lines) + "\n"
