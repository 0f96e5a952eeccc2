"""`agentkern traces report RUN --out FILE.html`: one self-contained HTML file (inline CSS and SVG, no script,
nothing fetched) that shows how the search went and what it found."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer, PythonLexer

from agentkern import __version__
from agentkern.candidates import ancestry, family_of
from agentkern.helpers import atomic_write_text
from agentkern.traces import charts, describe, diff
from agentkern.traces.templating import render
from agentkern.traces.trace import RunTrace, source_of

CODE_STYLE = "friendly"  # a light pygments style that prints well


def write_report(trace: RunTrace, out_file: Path) -> Path:
    html = render("report.html.j2", **context(trace))
    out_file = out_file.expanduser()
    atomic_write_text(out_file, html)
    return out_file


def context(trace: RunTrace) -> dict:
    cands = [{**c, "family": family_of(c["strategy"] or "?")} for c in trace.candidates]
    families = list(dict.fromkeys(c["family"] for c in cands))
    best = trace.best
    statuses = Counter(c["status"] for c in cands)
    usage = agent_usage(trace.calls)
    formatter = HtmlFormatter(style=CODE_STYLE, cssclass="highlight", linenos="table")
    code = source_of(best)
    return {
        "trace": trace,
        "run": trace.run,
        "options": trace.run["options"],
        "best": best,
        "best_text": describe.speedup_text(best),
        "beats_reference": describe.beats_reference(best),
        "best_noise": describe.noise_note(best),
        "best_correctness": describe.correctness_lines(best) if best else [],
        "best_timing": describe.timing_lines(best) if best else [],
        "best_code": Markup(highlight(code, PythonLexer(), formatter)) if code else None,
        "lineage": lineage_steps(trace, best),
        "code_css": Markup(formatter.get_style_defs(".highlight")),
        "candidates": cands,
        "families": families,
        "status_colours": charts.STATUS_COLOURS,
        "best_chart": charts.best_so_far(best_per_iteration(trace)),
        "population_chart": charts.population(cands, families),
        "verdict_chart": charts.bars(
            [(s, n, charts.STATUS_COLOURS.get(s, charts.OTHER_COLOUR)) for s, n in statuses.most_common()]
        ),
        "usage": usage,
        "tokens_chart": charts.bars([(a, u["tokens"], "#1565c0") for a, u in usage.items()], unit=" tok")
        if usage
        else None,
        "cost_chart": charts.bars([(a, round(u["cost_usd"], 6), "#6a1b9a") for a, u in usage.items()], unit=" USD")
        if usage and any(u["cost_usd"] for u in usage.values())
        else None,
        "describe": describe,
        "when": _when,
        "generated": time.strftime("%Y-%m-%d %H:%M:%S"),
        "version": __version__,
    }


def lineage_steps(trace: RunTrace, best) -> list[dict]:
    """How the best kernel was reached: each step of its lineage with its diff against its parent."""
    if best is None:
        return []
    formatter = HtmlFormatter(style=CODE_STYLE, cssclass="highlight")
    chain = ancestry(best, trace.candidate)
    steps = []
    for parent, child in zip(chain, chain[1:]):
        text = diff.unified(source_of(parent), source_of(child), f"{parent['id']}.py", f"{child['id']}.py")
        steps.append(
            {
                "candidate": child,
                "parent": parent,
                "speedup": describe.speedup_text(child),
                "diff": Markup(highlight(text, DiffLexer(), formatter)) if text else None,
            }
        )
    return steps


def best_per_iteration(trace: RunTrace) -> list[tuple[int, float | None]]:
    """(iteration, best correct speedup among the candidates up to it, None before the first)."""
    out, best = [], None
    for it in trace.iterations():
        for c in it.candidates:
            if c["correct"] and c["speedup"] is not None and (best is None or c["speedup"] > best):
                best = c["speedup"]
        out.append((it.number, best))
    return out


def agent_usage(calls: list[dict]) -> dict[str, dict]:
    """Per agent: calls, failed calls, tokens in and out, cost, time waiting for the model."""
    usage: dict[str, dict] = {}
    for call in calls:
        u = usage.setdefault(
            call["agent"],
            {
                "calls": 0,
                "errors": 0,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "tokens": 0,
                "cost_usd": 0.0,
                "latency_s": 0.0,
            },
        )
        u["calls"] += 1
        u["errors"] += bool(call.get("error"))
        u["prompt_tokens"] += call["prompt_tokens"] or 0
        u["completion_tokens"] += call["completion_tokens"] or 0
        u["tokens"] = u["prompt_tokens"] + u["completion_tokens"]
        u["cost_usd"] += call["cost_usd"] or 0.0
        u["latency_s"] += call["latency_s"] or 0.0
    return usage


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"
