"""Critic: turns verdicts, compiler errors and timings into feedback, and applies the stop rule.

speedup@k is the best speedup among the first k evaluated candidates. The run stops when it has not
improved by at least min_gain for `patience` iterations, or a budget (iterations, time, cost, tokens) runs
out. A stalled iteration first widens the set of allowed optimisations (the next stage); only at the last
stage does it count towards patience.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from agentkern import candidates as population
from agentkern.loop.deps import Deps
from agentkern.loop.state import RunState
from agentkern.types import Candidate

LAST_STAGE = 3


def _feedback(records: list[Candidate]) -> str:
    lines = []
    for r in records:
        if r["status"] == "ok" and r["speedup"] is not None:
            kind = "predicted" if r.get("predicted") else "measured"
            lines.append(f"{r['id']} ({r['strategy']}): correct, {r['speedup']:.2f}x {kind}. {bottleneck(r)}".rstrip())
        elif r["status"] == "ok":
            lines.append(f"{r['id']} ({r['strategy']}): correct, not timed here")
        else:
            lines.append(f"{r['id']} ({r['strategy']}): {r['status']}: {r.get('error') or ''}".rstrip(": "))
    return "\n".join(lines)


def bottleneck(r: Candidate) -> str:
    """One or two sentences naming what limits the kernel, from the roofline, the counters or the cost model."""
    parts = []
    fraction, bound = r.get("roofline_fraction"), r.get("bound")
    if fraction and bound:
        if bound == "memory":
            advice = (
                "near the bandwidth limit: only moving fewer bytes (fusion, one pass) helps"
                if fraction >= 0.6
                else "far from the bandwidth limit: too few bytes in flight or extra passes over memory"
            )
        else:
            advice = (
                "near peak: little left to gain"
                if fraction >= 0.6
                else "far from peak: too little work per thread between loads, or no FMA/tensor-core use"
            )
        parts.append("Memory-bound" if bound == "memory" else "Compute-bound")
        parts[-1] += f" at {fraction:.0%} of the roofline, {advice}."
    counters = r.get("counters") or {}
    values = counters.get("values") or {}
    if counters.get("available"):
        if "achieved_occupancy_pct" in values:
            parts.append(
                f"Occupancy {values['achieved_occupancy_pct']:.0f}%, DRAM {values.get('dram_throughput_pct', 0):.0f}% "
                f"of peak, L2 {values.get('l2_throughput_pct', 0):.0f}%, tensor pipes "
                f"{values.get('tensor_pipe_active_pct', 0):.0f}%."
            )
        if counters.get("top_stalls"):
            parts.append("Top stalls: " + ", ".join(s["reason"] for s in counters["top_stalls"]) + ".")
        if "cpus_utilized" in values:
            parts.append(
                f"{values['cpus_utilized']:.2f} CPUs busy during the calls"
                + (f", IPC {values['ipc']:.2f}" if "ipc" in values else "")
                + (f", LLC miss rate {values['llc_miss_rate']:.0%}" if "llc_miss_rate" in values else "")
                + "."
            )
    notes = ((r.get("verdict") or {}).get("prediction") or {}).get("notes") or []
    if notes:
        parts.append("Cost model: " + "; ".join(notes) + ".")
    return " ".join(parts)


def _budget_exhausted(state: RunState, deps: Deps, iteration: int) -> str | None:
    o = deps.options
    if iteration >= o.max_iters:
        return f"reached --max-iters {o.max_iters}"
    if o.time_budget_s is not None and deps.clock() - state.get("started", deps.clock()) >= o.time_budget_s:
        return f"reached --time-budget {o.time_budget_s:g} s"
    if o.max_cost is not None and state.get("cost_usd", 0.0) >= o.max_cost:
        return f"reached --max-cost ${o.max_cost:g}"
    if o.max_tokens is not None and state.get("tokens", 0) >= o.max_tokens:
        return f"reached --max-tokens {o.max_tokens}"
    return None


def _near_speed_of_light(candidates: list[Candidate], fraction: float | None) -> str | None:
    """KernelAgent's stop: the best kernel is within reach of the roofline bound, little is left to gain."""
    best = population.best(candidates)
    if fraction is None or best is None or not best.get("roofline_fraction"):
        return None
    if best["roofline_fraction"] >= fraction:
        kind = "predicted" if best.get("predicted") else "measured"
        return f"{best['id']} reached {best['roofline_fraction']:.0%} of the roofline ({kind}; --stop-at-roofline {fraction:g})"
    return None


def run(state: RunState, runtime: Runtime[Deps]) -> RunState:
    deps = runtime.context
    iteration = state["iteration"]
    candidates = state.get("candidates", [])
    this_iteration = [c for c in candidates if c["iteration"] == iteration]
    history = list(state.get("best_history", []))
    previous = history[-1] if history else 0.0
    now = population.speedup_at_k(candidates, deps.options.k)
    history.append(now)
    gained = now > 0 and (previous == 0 or now >= previous * (1 + deps.options.min_gain))
    stage, stale = state.get("stage", 1), state.get("stale", 0)
    if gained:
        stale = 0
    elif stage < LAST_STAGE:
        stage += 1  # widen the search before counting towards patience
    else:
        stale += 1
    stopped = _budget_exhausted(state, deps, iteration)
    if stopped is None and not state.get("drafts"):
        stopped = "the coder had no new candidate to propose (search space exhausted)"
    if stopped is None:
        stopped = _near_speed_of_light(candidates, deps.options.stop_at_roofline)
    if stopped is None and stale >= deps.options.patience:
        stopped = f"speedup@k did not improve by {deps.options.min_gain:.0%} for {deps.options.patience} iterations"
    feedback = _feedback(this_iteration)
    deps.store.step(
        deps.run_id,
        iteration,
        "critic",
        f"speedup@k {now:.3f}; stage {stage}; stale {stale}" + (f"; stop: {stopped}" if stopped else ""),
        {"feedback": feedback, "speedup_at_k": now},
    )
    deps.on_event(
        "critic",
        {
            "iteration": iteration,
            "speedup_at_k": now,
            "stage": stage,
            "stopped": stopped,
            "tokens": state.get("tokens", 0),
            "cost_usd": state.get("cost_usd", 0.0),
        },
    )
    return {"best_history": history, "stage": stage, "stale": stale, "feedback": feedback, "stopped_because": stopped}
