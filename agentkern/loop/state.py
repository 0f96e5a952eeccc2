"""The optimisation graph's state. Plain JSON-able values only, so LangGraph's SQLite checkpointer can
save it after every node and a killed run resumes exactly where it stopped."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from agentkern.types import Candidate, Draft, EvaluatedDraft, Plan


class RunState(TypedDict, total=False):
    iteration: int  # incremented by the planner
    stage: int  # 1: tiling and vectorisation; 2: + fusion and algorithm variants; 3: + fine scheduling
    plan: Plan  # the planner's output for this iteration
    drafts: list[Draft]  # the coder's candidates for this iteration: id, source or error, strategy, params
    results: list[EvaluatedDraft]  # the compiler's verdicts for this iteration's drafts
    candidates: Annotated[list[Candidate], operator.add]  # every evaluated candidate, in order (appended)
    feedback: str  # the critic's words for the next planner and coder
    best_history: list[float]  # speedup@k after each iteration
    stale: int  # iterations in a row without a gain of at least min_gain
    stopped_because: str | None
    tokens: int
    cost_usd: float
    started: float  # wall-clock start, for --time-budget (kept across a resume)
    # The best candidates timed again once the search stopped (nodes/confirm.py); None: not confirmed
    confirmation: dict | None
