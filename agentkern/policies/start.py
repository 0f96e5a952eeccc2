"""Where an LLM run starts (`--start-from`): from the best known kernel instead of from nothing.

- exemplar: the fastest kernel the knowledge base holds for this problem, target and backend (added with
  `agentkern kb add --from-run`);
- builtin: the built-in policy's template kernel, when it recognises the problem;
- scratch: the model writes the first kernel;
- auto (the default): exemplar, else builtin, else scratch.

The starting kernel is the first iteration's one candidate, evaluated like any other; the model is not
asked anything in that iteration, and from the next one on it refines that kernel (it is the first parent).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from agentkern.types import Draft, Plan

CHOICES = ("auto", "exemplar", "builtin", "scratch")


@dataclass
class Starter:
    label: str  # "the built-in softmax template", "exemplar run-2026...", for the plan and the trace
    start: list[Draft] = field(default_factory=list)

    def plan(self) -> Plan:
        return {"summary": f"start from {self.label} (no model call)", "strategy": "start", "start": True}

    def drafts(self) -> list[Draft]:
        return [dict(d) for d in self.start]  # type: ignore[misc]


def exemplar_source(op: str, target: str, backend: str, root: Path | None = None) -> tuple[str, str] | None:
    """(kernel source, exemplar id) of the fastest measured run exemplar for op, target and backend."""
    from agentkern.kb.ingest import best_run_exemplar

    found = best_run_exemplar(op, target, backend, root)
    if found is None:
        return None
    path, doc_id = found
    block = re.search(r"```python\n(.*?)\n```", path.read_text(errors="replace"), re.S)
    return (block.group(1) + "\n", doc_id) if block else None


def check_choice(choice: str) -> None:
    """One clear error for a --start-from that is none of CHOICES (the built-in policy's runs too)."""
    if choice not in CHOICES:
        from agentkern.errors import UserError

        raise UserError(f"--start-from must be {', '.join(CHOICES[:-1])} or {CHOICES[-1]}, not {choice!r}")


def choose(
    choice: str, problem_path: Path, target: str, backend: str, size: str | None, features
) -> tuple[Starter | None, str]:
    """(the starter or None for scratch, one line on what was chosen and why)."""
    check_choice(choice)
    if choice == "scratch":
        return None, "from scratch (--start-from scratch)"
    if choice in ("auto", "exemplar"):
        found = exemplar_source(problem_path.stem, target, backend)
        if found is not None:
            source, doc_id = found
            draft: Draft = {
                "strategy": f"exemplar:{doc_id}/0",
                "params": {},
                "parent": None,
                "source": source,
                "error": None,
            }
            return Starter(f"exemplar {doc_id}", [draft]), f"from exemplar {doc_id} of the knowledge base"
        if choice == "exemplar":
            return (
                None,
                f"from scratch: the knowledge base has no run exemplar for {problem_path.stem} on {target} ({backend})",
            )
    from agentkern.errors import UserError
    from agentkern.policies.builtin.analysis import analyze_problem
    from agentkern.policies.builtin.policy import BuiltinPolicy

    try:
        spec = analyze_problem(problem_path, size=size)
    except UserError as exc:
        return None, f"from scratch: the built-in policy could not analyse the problem ({exc})"
    if not spec.get("family"):
        return None, f"from scratch: the built-in policy does not recognise the problem ({spec.get('reason')})"
    try:
        builtin = BuiltinPolicy(spec, backend, features=features)
        ctx = {"iteration": 1, "stage": 1, "elites": [], "tried": []}
        drafts = builtin.write(builtin.plan(ctx), ctx, 1)  # type: ignore[arg-type]
    except (ValueError, KeyError) as exc:
        return None, f"from scratch: no built-in {backend} template for {spec['family']} ({exc})"
    drafts = [d for d in drafts if d.get("source")][:1]
    if not drafts:
        return None, f"from scratch: no built-in {backend} template for {spec['family']}"
    return Starter(f"the built-in {spec['family']} template", drafts), f"from the built-in {spec['family']} template"
