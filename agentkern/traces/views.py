"""`agentkern traces list` and `agentkern traces show`: the runs in a table, and one run as a tree of
iterations whose leaves are what each agent saw and did (prompt, reply, code diff, compiler output,
correctness report, timing)."""

from __future__ import annotations

import json
from pathlib import Path

from rich import box
from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from agentkern import candidates as population
from agentkern.traces import describe, diff
from agentkern.traces.store import RunStore, confirmed_speedup, seen_status
from agentkern.traces.trace import RunTrace, Step

# Lines of one prompt, reply, diff or log shown in the run's tree; `--step N` and `--full` show all of it.
BLOCK_LINES = 40
THEME = "ansi_dark"  # the terminal's own palette: readable on dark and light backgrounds

SUMMARY_SQL = """
SELECT r.run_id, r.created, r.problem, r.target, r.backend, r.model, r.status, r.stopped_because,
       r.best_candidate, r.finished, r.owner, r.confirmation,
       (SELECT max(iteration) FROM steps s WHERE s.run_id = r.run_id) AS iterations,
       count(c.candidate_id) AS candidates, coalesce(sum(c.correct), 0) AS correct_candidates,
       max(CASE WHEN c.correct THEN c.speedup END) AS best_speedup,
       max(CASE WHEN c.correct AND c.predicted THEN 1 ELSE 0 END) AS predicted
FROM runs r LEFT JOIN candidates c ON c.run_id = r.run_id
GROUP BY r.run_id ORDER BY r.created, r.run_id
"""


def run_summaries(store: RunStore) -> list[dict]:
    """One row per run, oldest first: the fields of `traces list --json`."""
    rows = [seen_status(dict(r)) for r in store.db.execute(SUMMARY_SQL)]
    for row in rows:
        confirmed = confirmed_speedup(row)
        if confirmed is not None:  # the winner as timed again is the run's result (loop/nodes/confirm.py)
            row["search_best_speedup"], row["best_speedup"] = row["best_speedup"], confirmed
        row.pop("confirmation", None)
        row["iterations"] = row["iterations"] or 0
        row["predicted"] = bool(row["predicted"])
    return rows


def runs_table(rows: list[dict]) -> Table:
    # The run id starts with its date and time, so no separate "created" column (it is in --json).
    table = Table(title=f"{len(rows)} run(s)", title_justify="left", box=box.SIMPLE_HEAD)
    for name in ("run", "problem", "target", "backend", "model", "status", "iters", "ok/all", "best"):
        table.add_column(name, no_wrap=True)
    table.add_column("stopped because", overflow="fold", min_width=24)
    for r in rows:
        best = "-" if r["best_speedup"] is None else f"{r['best_speedup']:.2f}x" + ("*" if r["predicted"] else "")
        table.add_row(
            r["run_id"],
            _stem(r["problem"]),
            r["target"],
            r["backend"],
            r["model"],
            r["status"],
            str(r["iterations"]),
            f"{r['correct_candidates']}/{r['candidates']}",
            best,
            r["stopped_because"] or "",
        )
    if any(r["predicted"] for r in rows):
        table.caption = "* predicted by the cost model (the target GPU was not here), not measured"
    return table


def run_tree(trace: RunTrace, full: bool = False) -> Tree:
    """The whole run: iterations, their steps in graph order, and under each step what it saw and did."""
    run, best = trace.run, trace.best
    head = Text.assemble(
        (f"run {trace.run_id}", "bold"),
        f"  {trace.problem_name} on {run['target']} ({run['backend']}, model {run['model']})  {run['status']}",
    )
    if run.get("stopped_because"):
        head.append(f": {run['stopped_because']}")
    head.append(
        f"  best: {best['id']} {describe.speedup_text(best)}" if best else "  no correct candidate",
        style="bold green" if describe.beats_reference(best) else "bold yellow",
    )
    if best and describe.noise_note(best):
        head.append(f"  ({describe.noise_note(best)})", style="yellow")
    tree = Tree(head)
    chain = population.ancestry(best, trace.candidate) if best else []
    if len(chain) > 1:  # how the best kernel was reached, step by step (an LLM's refinements, the search's moves)
        tree.add(
            Text(
                "lineage of the best: " + " -> ".join(f"{c['id']} {describe.speedup_text(c)}" for c in chain),
                style="green",
            )
        )
    for iteration in trace.iterations():
        branch = tree.add(Text(f"iteration {iteration.number}", style="bold cyan"))
        for step in iteration.steps:
            add_step(branch, trace, step, None if full else BLOCK_LINES)
    return tree


def step_view(trace: RunTrace, number: int) -> Tree:
    """One step in full, nothing truncated."""
    step = trace.step(number)
    tree = Tree(Text(f"run {trace.run_id}, iteration {step.row['iteration']}", style="bold"))
    add_step(tree, trace, step, None)
    return tree


def add_step(parent: Tree, trace: RunTrace, step: Step, limit: int | None) -> None:
    label = Text.assemble((f"#{step.number} ", "dim"), (step.agent, "bold magenta"), f"  {step.row['summary'] or ''}")
    node = parent.add(label)
    if step.agent == "planner":
        _calls(node, trace, step, limit)
        if not step.calls:  # the built-in policy asks no model: its plan is the payload
            node.add(_block("plan", json.dumps(step.payload, indent=2, sort_keys=True), "json", limit, step))
    elif step.agent == "coder":
        _calls(node, trace, step, limit)
        if not step.calls:
            for draft in step.payload.get("drafts", []):
                node.add(
                    Text(
                        f"{draft.get('id')}: {draft.get('strategy')}  params {json.dumps(draft.get('params'))}"
                        + (f"  parent {draft['parent']}" if draft.get("parent") else "")
                        + (f"  error: {draft['error']}" if draft.get("error") else "")
                    )
                )
    elif step.agent == "compiler":
        _compiler(node, trace, step, limit)
    elif step.agent == "profiler":
        _profiler(node, step, limit)
    elif step.agent == "critic" and step.payload.get("feedback"):
        node.add(_block("feedback", step.payload["feedback"], "text", limit, step))


def _calls(node: Tree, trace: RunTrace, step: Step, limit: int | None) -> None:
    made = {}  # model call id -> the candidate its reply became (coder calls)
    if step.agent == "coder":
        iteration = step.row["iteration"]
        candidates = [c for c in trace.candidates if c["iteration"] == iteration]
        made = {
            call["id"]: cand["id"] + (f" (parent {cand['parent']})" if cand.get("parent") else "")
            for call, cand in zip(trace.coder_calls(iteration), candidates)
        }
    for k, call in enumerate(step.calls, start=1):
        became = f" -> candidate {made[call['id']]}" if call["id"] in made else ""
        sub = node.add(
            Text(
                f"model call {k}{became}: {call['model']}, {call['prompt_tokens']}+"
                f"{call['completion_tokens']} tokens, ${call['cost_usd'] or 0:.4f}, "
                f"{call['latency_s'] or 0:.1f} s",
                style="blue",
            )
        )
        sub.add(_block("prompt", call["prompt"] or "", "markdown", limit, step))
        if call.get("error"):
            sub.add(Text(f"error: {call['error']}", style="red"))
        else:
            sub.add(_block("reply", call["reply"] or "", "markdown", limit, step))
        notes = call.get("notes") or {}
        if notes.get("trimmed") or notes.get("window"):
            sub.add(
                Text(
                    f"context window {notes.get('window')} tokens"
                    + (f" ({notes['window_from']})" if notes.get("window_from") else "")
                    + (f", reply max {notes['max_tokens']}" if notes.get("max_tokens") else "")
                    + (f"; trimmed to fit: {', '.join(notes['trimmed'])}" if notes.get("trimmed") else "")
                    + (f"; finish {notes['finish_reason']}" if notes.get("finish_reason") else ""),
                    style="yellow" if notes.get("trimmed") else "dim",
                )
            )
        if call.get("retrieved"):
            names = [str(d.get("id", d)) if isinstance(d, dict) else str(d) for d in call["retrieved"]]
            sub.add(Text("retrieved: " + ", ".join(names), style="dim"))


def _compiler(node: Tree, trace: RunTrace, step: Step, limit: int | None) -> None:
    candidate = step.candidate
    if candidate is None:
        if step.payload.get("error"):
            node.add(Text(f"error: {step.payload['error']}", style="red"))
        return
    node.add(Text(f"{candidate['id']} {candidate['strategy']}", style="dim"))
    text, heading, lexer = diff.against_base(trace, candidate)
    if text:
        node.add(_block(heading, text, lexer, limit, step))
    elif candidate.get("path") or candidate.get("source"):
        node.add(Text(f"{heading}: no change", style="dim"))
    log = candidate.get("compile_log")
    why_none = (
        "none kept (the harness keeps logs of failures only)"
        if candidate["status"] == "ok"
        else "not in the store (recorded before it kept compiler output)"
    )
    node.add(
        _block("compiler output", log, "text", limit, step)
        if log
        else Text(f"compiler output: {why_none}", style="dim")
    )
    node.add(_block("correctness", "\n".join(describe.correctness_lines(candidate)), "yaml", limit, step))


def _profiler(node: Tree, step: Step, limit: int | None) -> None:
    if "counters" in step.payload:
        node.add(
            _block(
                "hardware counters", "\n".join(describe.counters_lines(step.payload["counters"])), "yaml", limit, step
            )
        )
    elif step.candidate is not None:
        node.add(_block("timing", "\n".join(describe.timing_lines(step.candidate)), "yaml", limit, step))


def _block(title: str, text: str, lexer: str, limit: int | None, step: Step | None) -> RenderableType:
    lines = text.rstrip("\n").splitlines()
    shown = lines if limit is None else lines[:limit]
    parts: list[RenderableType] = [
        Text(title, style="bold"),
        Syntax("\n".join(shown), lexer, theme=THEME, word_wrap=True, background_color="default"),
    ]
    if len(shown) < len(lines):
        where = f" (agentkern traces show {step.row['run_id']} --step {step.number} shows all)" if step else ""
        parts.append(Text(f"... {len(lines) - len(shown)} more lines{where}", style="dim italic"))
    return Group(*parts)


def _stem(path: str | None) -> str:
    return Path(path or "").stem
