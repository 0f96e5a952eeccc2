"""Code diffs between candidates: what did this step change, and what separates two runs' best kernels."""

from __future__ import annotations

import difflib

from agentkern import candidates as population
from agentkern.traces.trace import RunTrace, source_of
from agentkern.types import StoredCandidate


def unified(old: str | None, new: str | None, old_name: str, new_name: str, context: int = 3) -> str:
    """A unified diff ("" when the texts are equal); a missing side diffs as an empty file."""
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        (new or "").splitlines(keepends=True),
        fromfile=old_name,
        tofile=new_name,
        n=context,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def base_of(trace: RunTrace, candidate: StoredCandidate) -> tuple[StoredCandidate | None, str]:
    """(the candidate to diff against, why that one): its recorded parent (the built-in policy's, or the
    kernel an LLM coder was shown to refine); without one (a first kernel, a run recorded before parents were
    kept), the best correct kernel of the earlier iterations."""
    parent = trace.candidate(candidate.get("parent"))
    if parent is not None:
        return parent, f"its parent {parent['id']}"
    earlier = population.best([c for c in trace.candidates if c["iteration"] < candidate["iteration"]])
    if earlier is not None:
        return (
            earlier,
            f"{earlier['id']}, the best kernel before iteration {candidate['iteration']} (no parent recorded)",
        )
    return None, "no earlier kernel to compare it with"


def against_base(trace: RunTrace, candidate: StoredCandidate) -> tuple[str, str, str]:
    """(text, heading, lexer): the diff against the candidate's base, or its whole source when it has none
    (a diff of only added lines says less than the code itself)."""
    base, why = base_of(trace, candidate)
    if base is None:
        return source_of(candidate) or "", f"source ({why})", "python"
    text = unified(source_of(base), source_of(candidate), f"{base['id']}.py", f"{candidate['id']}.py")
    return text, f"diff against {why}", "diff"
