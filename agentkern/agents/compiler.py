"""Compiler: builds and checks each draft in the harness's sandbox (one fresh process per candidate).

The harness builds, checks correctness and times in one sandboxed evaluation; this node records its verdict,
and the profiler node reads the measurement. A draft without code (a model reply the coder could not use)
gets a verdict too, so the critic can say why.
"""

from __future__ import annotations

import json

from agentkern.helpers import atomic_write_json, atomic_write_text, sha256_text


def _evaluate_once(draft: dict, deps) -> tuple[dict, str]:
    """Evaluate a draft, or reuse its verdict if this node already did before a kill: a resumed run
    never evaluates a candidate twice."""
    path = deps.run_dir / "candidates" / f"{draft['id']}.py"
    saved = path.with_suffix(".verdict.json")
    digest = sha256_text(draft["source"])
    if saved.exists():
        cached = json.loads(saved.read_text())
        if cached.get("source_sha256") == digest:
            return cached["verdict"], str(path)
    atomic_write_text(path, draft["source"])
    verdict = deps.evaluate(str(deps.problem_path), path, deps.target.name, deps.eval_options).to_json()
    atomic_write_json(saved, {"source_sha256": digest, "verdict": verdict})
    return verdict, str(path)


def run(state: dict, deps) -> dict:
    results = []
    for draft in state.get("drafts", []):
        deps.on_event("compiler", {"candidate": draft["id"]})
        if not draft.get("source"):
            verdict = {"status": "no_code", "correct": False, "error": draft.get("error") or "no code", "details": {}}
            path = None
        else:
            verdict, path = _evaluate_once(draft, deps)
        results.append({"draft": {k: v for k, v in draft.items() if k != "source"}, "path": path, "verdict": verdict})
        deps.store.step(deps.run_id, state["iteration"], "compiler", f"{draft['id']}: {verdict['status']}",
                        {"candidate": draft["id"], "status": verdict["status"], "error": verdict.get("error")},
                        key=draft["id"])
    return {"results": results}
