"""What an LLM coder works on: a parent kernel, its verdict, and what was already tried from it.

Each coder call improves one parent: the elites of the strategy families, best first, one per branch of the
beam (quality-diversity: a second branch refines the second family's best, not the first one's again). The
prompt carries the parent's whole source and verdict, and the lineage's memory: the last attempts whose
parent was this kernel or one of its ancestors, with what happened to each, and for a failure the compiler
log or the correctness report, so the model does not repeat a failed idea. Without any correct kernel yet,
the branch has no parent and its memory is the run's latest attempts.

Plain functions of the run's candidate records (types.Candidate), so a resumed run shows the same thing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

from agentkern import candidates as population
from agentkern.types import Candidate

MEMORY = 4  # attempts remembered per lineage; the prompt budget may keep fewer
CROSSOVER_BEAM = 3  # from this many branches on, the last one combines two families' best kernels
OUTCOME_CHARS = 240  # of a failure's error in its one-line outcome
REPORT_CHARS = 2400  # of one failure's log or correctness report (head and tail kept)


class Attempt(TypedDict):
    id: str
    strategy: str
    parent: str | None
    outcome: str  # one line: "correct, 1.32x measured" / "compile_error: ..."
    report: str  # for a failure: the compiler log or the correctness report; "" otherwise


class Parent(TypedDict):
    id: str
    strategy: str
    source: str
    verdict: str  # lines: status, speedup, roofline, bound, counters, compiled resources, cost-model notes


class Branch(TypedDict, total=False):
    parent: Parent | None
    attempts: list[Attempt]  # oldest first
    other: Parent  # a crossover branch's second parent: another family's elite, to combine with `parent`


def trim_middle(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, keeping its head and its tail (an error's cause is usually at
    one end of a log, the summary at the other)."""
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head
    dropped = text.count("\n", head, len(text) - tail)
    return f"{text[:head]}\n[... {dropped} lines left out ...]\n{text[-tail:]}"


def outcome(c: Candidate) -> str:
    """One line on what happened to a candidate."""
    if c.get("correct") and c.get("speedup") is not None:
        kind = "predicted" if c.get("predicted") else "measured"
        line = f"correct, {c['speedup']:.2f}x {kind}"
        if c.get("roofline_fraction"):
            line += f", {c['roofline_fraction']:.0%} of the roofline"
        return line
    if c.get("status") == "ok":
        return "correct, not timed here"
    error = " ".join((c.get("error") or "").split())
    return f"{c.get('status')}: {error[:OUTCOME_CHARS]}" if error else str(c.get("status"))


def verdict_text(c: Candidate) -> str:
    """The parent's verdict for the prompt: the outcome, then what limits it (critic.bottleneck's words)."""
    from agentkern.loop.nodes.critic import bottleneck

    lines = [outcome(c)]
    if c.get("kernel_ms") and c.get("reference_ms"):
        lines.append(f"kernel {c['kernel_ms']:.4g} ms, reference {c['reference_ms']:.4g} ms")
    limits = bottleneck(c)
    if limits:
        lines.append(limits)
    compiled = (c.get("verdict") or {}).get("compiled")
    if compiled:
        lines.append(f"Compiled for the target: {compiled}")
    return "\n".join(lines)


def _source(c: Candidate) -> str | None:
    try:
        return Path(c["path"]).read_text() if c.get("path") else None
    except OSError:
        return None


def attempt(c: Candidate) -> Attempt:
    failed = not (c.get("correct") and c.get("speedup") is not None) and c.get("status") != "ok"
    return {
        "id": c["id"],
        "strategy": c["strategy"],
        "parent": c.get("parent"),
        "outcome": outcome(c),
        "report": trim_middle(c.get("report") or "", REPORT_CHARS) if failed else "",
    }


def _parent(c: Candidate, source: str) -> Parent:
    return {"id": c["id"], "strategy": c["strategy"], "source": source, "verdict": verdict_text(c)}


def branches(candidates: list[Candidate], count: int) -> list[Branch]:
    """One branch per coder call of an iteration: its parent (an elite, best family first, taken in turn)
    and the lineage's memory. With CROSSOVER_BEAM branches or more and two families' elites, the last branch
    is a crossover: the best kernel with the second family's best beside it, to combine."""
    elites = sorted(population.elites(candidates).values(), key=lambda c: (-c["speedup"], c["id"]))
    by_id = {c["id"]: c for c in candidates}
    out: list[Branch] = []
    for j in range(count):
        if not elites:
            out.append({"parent": None, "attempts": [attempt(c) for c in candidates[-MEMORY:]]})
            continue
        chosen = elites[j % len(elites)]
        source = _source(chosen)
        if source is None:  # its file is gone (a moved run folder): nothing to refine
            out.append({"parent": None, "attempts": [attempt(c) for c in candidates[-MEMORY:]]})
            continue
        chain = {c["id"] for c in population.ancestry(chosen, lambda i: by_id.get(i or ""))}
        tried = [c for c in candidates if c.get("parent") in chain and c["id"] != chosen["id"]]
        out.append({"parent": _parent(chosen, source), "attempts": [attempt(c) for c in tried[-MEMORY:]]})
    if count >= CROSSOVER_BEAM and len(elites) >= 2:
        first, second = elites[0], elites[1]
        sources = _source(first), _source(second)
        if sources[0] is not None and sources[1] is not None:
            out[-1] = {"parent": _parent(first, sources[0]), "other": _parent(second, sources[1]), "attempts": []}
    return out


def report_of(verdict: dict[str, Any]) -> str:
    """What the next prompt should see of a failed evaluation, beyond its one-line outcome: the correctness
    report (which trial, which inputs; never the seed) and the compiler's and worker's output."""
    from agentkern.traces.evidence import LOG_KEYS

    details = verdict.get("details") or {}
    parts = []
    error = " ".join((verdict.get("error") or "").split())
    if len(error) > OUTCOME_CHARS:  # the outcome line shows only its start
        parts.append(f"error: {verdict['error'].strip()}")
    failed = details.get("failed_trial")
    if failed:
        where = ", ".join(f"{k} {v}" for k, v in failed.items() if k != "seed")
        parts.append(f"failed trial: {where}")
    for key in ("rejected_because", "suspicious"):
        if details.get(key):
            parts.append(f"{key.replace('_', ' ')}: {details[key]}")
    parts += [f"== {title} ==\n{details[key].rstrip()}" for key, title in LOG_KEYS if details.get(key)]
    return trim_middle("\n".join(parts), 4 * REPORT_CHARS)
