"""Compiler: builds and checks each draft in the harness's sandbox (one fresh process per candidate), the
beam's drafts side by side on the run's executor (agentkern/executors/).

The harness builds, checks correctness and times in one sandboxed evaluation; this node records its verdict,
and the profiler node reads the measurement. A draft without code (a model reply the coder could not use)
gets a verdict too, so the critic can say why.
"""

from __future__ import annotations

import json
from pathlib import Path

from langgraph.runtime import Runtime

from agentkern.helpers import atomic_write_json, atomic_write_text, sha256_text
from agentkern.loop.deps import Deps
from agentkern.loop.state import RunState
from agentkern.types import Draft, EvalResult, EvaluatedDraft, Verdict


def _cached(draft: Draft, deps: Deps) -> tuple[Verdict | None, Path, str]:
    """(saved verdict or None, candidate path, source digest). A verdict this node saved before a kill is
    reused: a resumed run never evaluates a candidate twice."""
    path = deps.run_dir / "candidates" / f"{draft['id']}.py"
    digest = sha256_text(draft["source"])
    saved = path.with_suffix(".verdict.json")
    if saved.exists():
        cached = json.loads(saved.read_text())
        if cached.get("source_sha256") == digest:
            return cached["verdict"], path, digest
    return None, path, digest


def _evaluate_all(drafts: list[Draft], deps: Deps) -> dict[str, tuple[Verdict, str]]:
    """Verdicts by draft id. With an executor (deps.executor) the beam's candidates are evaluated at once,
    as many in parallel as it has workers; without one (tests' stand-ins), one after the other."""
    verdicts: dict[str, tuple[Verdict, str]] = {}
    pending: list[tuple[Draft, Path, str]] = []
    for draft in drafts:
        cached, path, digest = _cached(draft, deps)
        if cached is not None:
            verdicts[draft["id"]] = (cached, str(path))
            continue
        atomic_write_text(path, draft["source"])
        pending.append((draft, path, digest))

    def keep(item: tuple[Draft, Path, str], result: EvalResult) -> None:
        """Saved as soon as it is known: a kill loses no finished evaluation."""
        draft, path, digest = item
        verdict = result.to_json()
        atomic_write_json(path.with_suffix(".verdict.json"), {"source_sha256": digest, "verdict": verdict})
        verdicts[draft["id"]] = (verdict, str(path))

    if deps.executor is not None:
        from concurrent.futures import as_completed

        from agentkern.executors import EvalTask

        futures = {
            deps.executor.submit(
                EvalTask(str(deps.problem_path), str(item[1]), deps.target.name, deps.eval_options)
            ): item
            for item in pending
        }
        for future in as_completed(futures):
            keep(futures[future], future.result())
    else:
        for item in pending:
            keep(item, deps.evaluate(str(deps.problem_path), item[1], deps.target.name, deps.eval_options))
    return verdicts


def run(state: RunState, runtime: Runtime[Deps]) -> RunState:
    deps = runtime.context
    drafts = state.get("drafts", [])
    for draft in drafts:
        deps.on_event("compiler", {"candidate": draft["id"]})
    verdicts = _evaluate_all([d for d in drafts if d.get("source")], deps)
    results: list[EvaluatedDraft] = []
    for draft in drafts:
        if not draft.get("source"):
            verdict: Verdict = {
                "status": "no_code",
                "correct": False,
                "error": draft.get("error") or "no code",
                "details": {},
            }
            path = None
        else:
            verdict, path = verdicts[draft["id"]]
        results.append({"draft": {k: v for k, v in draft.items() if k != "source"}, "path": path, "verdict": verdict})
        deps.store.step(
            deps.run_id,
            state["iteration"],
            "compiler",
            f"{draft['id']}: {verdict['status']}",
            {"candidate": draft["id"], "status": verdict["status"], "error": verdict.get("error")},
            key=draft["id"],
        )
    return {"results": results}
