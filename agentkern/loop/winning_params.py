"""Which template parameters won a run, and the measurements that say why.

The built-in policy's candidates are one template rendered with different parameters (tile shapes, K
blocks, prefetch distances, threading), each timed by the harness on the host the run is on. The answer a
user wants after a search is short: what it chose, what it started from, and for each value it changed, the
best measured candidate that did not have that value: the evidence that the value itself paid, on this
machine. Nothing here is predicted: every figure is a candidate's measured speedup.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentkern import candidates as population
from agentkern.types import CandidateRecord


def explain(
    candidates: list[CandidateRecord],
    host: str | None = None,
    winner: dict | None = None,
    read_params: Callable[[dict], dict] | None = None,
) -> dict[str, Any] | None:
    """The winner's parameters against the run's first correct candidate (the host's defaults, or the best
    known kernel the run was seeded with), and per changed parameter the best correct candidate that kept
    another value. `winner`: the run's winner when it was timed again (its record, its re-timed speedup);
    default: the search's fastest. None when the winner has no parameters (an LLM's hand-written kernel).
    The rivals' figures are the search's own timings. `read_params` (the policy's): which of the winner's
    parameters its kernel reads at the problem's shapes; only those are credited ("read"), all by default."""
    best = winner or population.best(candidates)
    if best is None or not best.get("params"):
        return None
    measured = [c for c in population.correct(candidates) if c.get("params")]  # the winner among them
    start = measured[0]
    won, began = best["params"], start["params"]
    read = read_params(won) if read_params else dict(won)
    changed = {k: {"from": began.get(k), "to": v} for k, v in won.items() if began.get(k) != v and k in read}
    for name, change in changed.items():
        rivals = [c for c in measured if c["params"].get(name) != won[name]]
        if rivals:
            rival = max(rivals, key=lambda c: c["speedup"])
            change["best_without"] = {
                "value": rival["params"].get(name),
                "speedup": rival["speedup"],
                "candidate": rival["id"],
            }
    return {
        "params": won,
        "read": sorted(read),
        "candidate": best["id"],
        "speedup": best["speedup"],
        "start": {"params": began, "candidate": start["id"], "speedup": start["speedup"]},
        "changed": changed,
        "measured_candidates": len(measured),
        "host": host,
    }


def one_line(explained: dict[str, Any] | None) -> str | None:
    """The explanation as a sentence for the terminal."""
    if not explained:
        return None
    start = explained["start"]
    where = f" on {explained['host']}" if explained.get("host") else ""
    if not _read(explained):
        return f"parameters: none read by this kernel at the problem's shapes, {explained['speedup']:.2f}x{where}"
    if not explained["changed"]:
        return (
            f"parameters: the starting ones won ({_params(_read(explained))}), {explained['speedup']:.2f}x; "
            f"{explained['measured_candidates'] - 1} other parameter sets measured{where} were slower"
        )
    parts = []
    for name, change in explained["changed"].items():
        part = f"{name}={change['to']} (start {change['from']}"
        rival = change.get("best_without")
        if rival:
            part += f"; best with {name}={rival['value']}: {rival['speedup']:.2f}x, {rival['candidate']}"
        parts.append(part + ")")
    return (
        f"parameters: {', '.join(parts)}: {explained['speedup']:.2f}x ({explained['candidate']}) against the "
        f"start's {start['speedup']:.2f}x ({start['candidate']}), measured{where}"
    )


def _read(explained: dict[str, Any]) -> dict[str, Any]:
    """The winner's parameters its kernel reads (an explanation from before "read" was recorded: all of them)."""
    read = explained.get("read")
    return {k: v for k, v in explained["params"].items() if read is None or k in read}


def _params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "none"
