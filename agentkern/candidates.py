"""The population of evaluated candidates, grouped by strategy family (a quality-diversity archive).

Every correct candidate is kept. The planner draws parents from the best of each family, so one strong
family does not crowd out the others, and speedup@k (the best speedup among the first k evaluated
candidates) drives the stop rule.
"""

from __future__ import annotations


def family_of(strategy: str) -> str:
    """ "softmax:online/vec8" -> "softmax:online": the part before the last '/' names the family."""
    return strategy.rsplit("/", 1)[0]


def correct(candidates: list[dict]) -> list[dict]:
    return [c for c in candidates if c.get("correct") and c.get("speedup") is not None]


def best(candidates: list[dict]) -> dict | None:
    ranked = sorted(correct(candidates), key=lambda c: (-c["speedup"], c["id"]))
    return ranked[0] if ranked else None


def elites(candidates: list[dict]) -> dict[str, dict]:
    """The best candidate of each strategy family."""
    out: dict[str, dict] = {}
    for c in correct(candidates):
        fam = family_of(c["strategy"])
        if fam not in out or c["speedup"] > out[fam]["speedup"]:
            out[fam] = c
    return out


def speedup_at_k(candidates: list[dict], k: int | None = None) -> float:
    """Best speedup among the first k evaluated candidates (all of them when k is None); 0 if none correct."""
    first = candidates if k is None else candidates[:k]
    found = best(first)
    return found["speedup"] if found else 0.0


def summary(candidates: list[dict], limit: int = 8) -> list[dict]:
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
