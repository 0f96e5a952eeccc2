"""Planner: picks the next strategy from the problem, the target, the population and the critic's words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from agentkern import candidates as population
from agentkern.loop.deps import Deps
from agentkern.loop.state import RunState
from agentkern.policies.base import PolicyContext


def knowledge(deps: Deps, candidates: list | None = None) -> list[dict[str, Any]]:
    """Documents from the knowledge base for this problem, target and backend, for a policy that reads them
    (an LLM's; the built-in policy does not, so its runs never open the knowledge base)."""
    if getattr(deps, "retriever", None) is None or not getattr(deps.policy, "reads_knowledge", False):
        return []
    starts = getattr(deps.policy, "starts_from_kernel", None)
    if starts is not None and starts(candidates or []):  # the first kernel comes from --start-from: no prompt
        return []
    return deps.retriever(deps.problem_source, deps.target, deps.backend, name=Path(deps.problem_path).stem)


def context(state: RunState, deps: Deps) -> PolicyContext:
    """What planner and coder see. Built fresh from the state, so it is the same after a resume."""
    candidates = state.get("candidates", [])
    return {
        "iteration": state.get("iteration", 0),
        "stage": state.get("stage", 1),
        "elites": population.summary(candidates),
        "best": population.best(candidates),
        "tried": [c.get("params") for c in candidates if c.get("params")],
        "candidates": candidates,
        "beam": deps.options.beam,
        "feedback": state.get("feedback", ""),
        "problem_source": deps.problem_source,
        "target": deps.target,
        "backend": deps.backend,
        "run_id": deps.run_id,
        "knowledge": knowledge(deps, candidates),
    }


def run(state: RunState, runtime: Runtime[Deps]) -> RunState:
    deps = runtime.context
    iteration = state.get("iteration", 0) + 1
    ctx = context({**state, "iteration": iteration}, deps)
    plan = deps.policy.plan(ctx)
    payload = {**plan, "retrieved": [d["id"] for d in ctx["knowledge"]]} if ctx["knowledge"] else plan
    deps.store.step(deps.run_id, iteration, "planner", plan.get("summary", ""), payload)
    deps.on_event("planner", {"iteration": iteration, "plan": plan})
    update: RunState = {"iteration": iteration, "plan": plan, "drafts": [], "results": []}
    if "started" not in state:
        update["started"] = deps.clock()
    update["tokens"] = state.get("tokens", 0) + plan.get("tokens", 0)
    update["cost_usd"] = state.get("cost_usd", 0.0) + plan.get("cost_usd", 0.0)
    return update
