"""Coder: writes candidate ModelNew files for the chosen backend (several per iteration with --beam)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from agentkern.loop.deps import Deps
from agentkern.loop.nodes.planner import context
from agentkern.loop.state import RunState


def run(state: RunState, runtime: Runtime[Deps]) -> RunState:
    deps = runtime.context
    iteration = state["iteration"]
    ctx = context(state, deps)
    drafts = deps.policy.write(state["plan"], ctx, deps.options.beam)
    for j, draft in enumerate(drafts):
        draft["id"] = f"{iteration:03d}-{j}"
        draft["iteration"] = iteration
    tokens = sum(d.pop("tokens", 0) for d in drafts)
    cost = sum(d.pop("cost_usd", 0.0) for d in drafts)
    summary = ", ".join(d["strategy"] for d in drafts)
    deps.store.step(
        deps.run_id,
        iteration,
        "coder",
        f"{len(drafts)} candidate(s): {summary}",
        {"drafts": [{k: v for k, v in d.items() if k != "source"} for d in drafts]},
    )
    deps.on_event("coder", {"iteration": iteration, "drafts": drafts})
    return {"drafts": drafts, "tokens": state.get("tokens", 0) + tokens, "cost_usd": state.get("cost_usd", 0.0) + cost}
