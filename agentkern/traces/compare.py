"""`agentkern traces diff RUN_A RUN_B`: two runs side by side (settings, results) and the code diff of their
best kernels."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from agentkern.traces import describe, diff
from agentkern.traces.trace import RunTrace, source_of

CHANGED = "bold yellow"


def results(trace: RunTrace) -> dict[str, str]:
    """What a run achieved, as the rows of the results table (the same keys for every run)."""
    best, cands = trace.best, trace.candidates
    tokens = sum((c["prompt_tokens"] or 0) + (c["completion_tokens"] or 0) for c in trace.calls)
    return {
        "problem": trace.problem_name,
        "target": trace.run["target"],
        "backend": trace.run["backend"],
        "model": trace.run["model"],
        "status": trace.run["status"],
        "stopped because": trace.run.get("stopped_because") or "-",
        "iterations": str(max((s.row["iteration"] for s in trace.steps), default=0)),
        "candidates": str(len(cands)),
        "correct": str(sum(c["correct"] for c in cands)),
        "best candidate": f"{best['id']} ({best['strategy']})" if best else "-",
        "best speedup": describe.speedup_text(best),
        "best kernel ms": f"{best['kernel_ms']:.4g}" if best and best.get("kernel_ms") is not None else "-",
        "reference ms": f"{best['reference_ms']:.4g}" if best and best.get("reference_ms") is not None else "-",
        "roofline fraction": f"{best['roofline_fraction']:.1%}" if best and best.get("roofline_fraction") else "-",
        "model calls": str(len(trace.calls)),
        "tokens": str(tokens),
        "cost usd": f"{sum(c['cost_usd'] or 0 for c in trace.calls):.4f}",
    }


def side_by_side(title: str, left: dict, right: dict, name_a: str, name_b: str) -> Table:
    """Rows of both dicts; a row whose values differ is highlighted."""
    table = Table(title=title, title_justify="left")
    table.add_column("", style="bold")
    table.add_column(name_a, overflow="fold")
    table.add_column(name_b, overflow="fold")
    for key in list(dict.fromkeys([*left, *right])):
        a, b = _show(left.get(key)), _show(right.get(key))
        style = CHANGED if a != b else None
        table.add_row(key, Text(a, style=style), Text(b, style=style))
    return table


def compare(a: RunTrace, b: RunTrace) -> list[RenderableType]:
    out: list[RenderableType] = [
        side_by_side("settings", a.run["options"], b.run["options"], a.run_id, b.run_id),
        side_by_side("results", results(a), results(b), a.run_id, b.run_id),
    ]
    best_a, best_b = a.best, b.best
    if best_a is None or best_b is None:
        missing = ", ".join(t.run_id for t, best in ((a, best_a), (b, best_b)) if best is None)
        out.append(Text(f"best kernels: no correct candidate in {missing}; nothing to diff", style="yellow"))
        return out
    text = diff.unified(
        source_of(best_a), source_of(best_b), f"{a.run_id}/{best_a['id']}.py", f"{b.run_id}/{best_b['id']}.py"
    )
    heading = Text(
        f"best kernels: {best_a['id']} ({describe.speedup_text(best_a)}) -> {best_b['id']} "
        f"({describe.speedup_text(best_b)})",
        style="bold",
    )
    out.append(
        Group(
            heading,
            Syntax(text, "diff", theme="ansi_dark", word_wrap=True, background_color="default")
            if text
            else Text("the two best kernels are the same code", style="dim"),
        )
    )
    return out


def _show(value) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else str(value)
