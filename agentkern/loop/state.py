"""The optimisation graph's state. Plain JSON-able values only, so LangGraph's SQLite checkpointer can
save it after every node and a killed run resumes exactly where it stopped."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict


class RunState(TypedDict, total=False):
    iteration: int  # incremented by the planner
    stage: int  # 1: tiling and vectorisation; 2: + fusion and algorithm variants; 3: + fine scheduling
    plan: dict  # the planner's output for this iteration
    drafts: list[dict]  # the coder's candidates for this iteration: id, source or error, strategy, params
    results: list[dict]  # the compiler's verdicts for this iteration's drafts
    candidates: Annotated[list[dict], operator.add]  # every evaluated candidate, in order (appended)
    feedback: str  # the critic's words for the next planner and coder
    best_history: list[float]  # speedup@k after each iteration
    stale: int  # iterations in a row without a gain of at least min_gain
    stopped_because: str | None
    tokens: int
    cost_usd: float
    started: float  # wall-clock start, for --time-budget (kept across a resume)
