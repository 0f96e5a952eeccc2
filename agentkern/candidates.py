"""The population of evaluated candidates, grouped by strategy family (a quality-diversity archive).

Every correct candidate is kept. The planner draws parents from the best of each family, so one strong
family does not crowd out the others, and speedup@k (the best speedup among the first k evaluated
candidates) drives the stop rule. speedup@k is defined here once; bench/metrics.py averages it over a suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import TypeVar

from agentkern.types import CandidateRecord, Elite

# The run's records (types.Candidate) or those read back from the run store (types.StoredCandidate).
C = TypeVar("C", bound=CandidateRecord)


def family_of(strategy: str) -> str:
    """ "softmax:online/vec8" -> "softmax:online": the part before the last '/' names the family."""
    return strategy.rsplit("/", 1)[0]


def ancestry(candidate: C, lookup: Callable[[str | None], C | None]) -> list[C]:
    """The candidate's ancestors by recorded parent (`lookup(id)` finds one), oldest first, ending with the
    candidate itself. A parent id seen before ends the walk (a damaged store must not loop it)."""
    chain: list[C] = []
    seen: set[str] = set()
    node: C | None = candidate
    while node is not None and node["id"] not in seen:
        seen.add(node["id"])
        chain.append(node)
        node = lookup(node.get("parent"))
    return chain[::-1]


def correct(candidates: Iterable[C]) -> list[C]:
    return [c for c in candidates if c.get("correct") and c.get("speedup") is not None]


def best(candidates: Iterable[C]) -> C | None:
    ranked = sorted(correct(candidates), key=lambda c: (-c["speedup"], c["id"]))
    return ranked[0] if ranked else None


def elites(candidates: Iterable[C]) -> dict[str, C]:
    """The best candidate of each strategy family."""
    out: dict[str, C] = {}
    for c in correct(candidates):
        fam = family_of(c["strategy"])
        if fam not in out or c["speedup"] > out[fam]["speedup"]:
            out[fam] = c
    return out


def speedup_at_k_of(speedups: Iterable[float | None], k: int | None = None) -> float:
    """speedup@k of candidates given as their speedups in evaluation order (None: not correct): the best among
    the first k (all of them when k is None), 0 when none of those is correct."""
    first = speedups if k is None else islice(speedups, k)
    return max((s for s in first if s is not None), default=0.0)


def speedup_at_k(candidates: Sequence[CandidateRecord], k: int | None = None) -> float:
    """Best speedup among the first k evaluated candidates (all of them when k is None); 0 if none correct."""
    return speedup_at_k_of((c.get("speedup") if c.get("correct") else None for c in candidates), k)


def summary(candidates: Iterable[CandidateRecord], limit: int = 8) -> list[Elite]:
    """What the planner and critic see: the elites, best first, in a few fields."""
    ranked = sorted(elites(candidates).values(), key=lambda c: -c["speedup"])[:limit]
    return [
        {
            "id": c["id"],
            "strategy": c["strategy"],
            "params": c.get("params", {}),
            "speedup": c["speedup"],
            "roofline_fraction": c.get("roofline_fraction"),
        }
        for c in ranked
    ]
