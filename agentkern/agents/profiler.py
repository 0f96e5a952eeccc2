"""Profiler: turns each verdict into a candidate record with what the critic needs beyond a time: the
fraction of the roofline bound reached, and whether the problem is compute- or memory-bound there."""

from __future__ import annotations


def run(state: dict, deps) -> dict:
    records = []
    for item in state.get("results", []):
        draft, verdict = item["draft"], item["verdict"]
        details = verdict.get("details", {})
        timing = details.get("timing") or {}
        record = {
            "id": draft["id"],
            "iteration": draft["iteration"],
            "strategy": draft["strategy"],
            "params": draft.get("params", {}),
            "parent": draft.get("parent"),
            "path": item["path"],
            "status": verdict["status"],
            "correct": bool(verdict.get("correct")) and not details.get("suspicious"),
            "speedup": verdict.get("speedup"),
            "kernel_ms": verdict.get("kernel_ms"),
            "reference_ms": verdict.get("reference_ms"),
            "roofline_fraction": verdict.get("roofline_fraction"),
            "bound": details.get("bound"),
            "predicted": "unavailable" in timing,
            "error": verdict.get("error"),
            "verdict": {"status": verdict["status"], "rejected_because": details.get("rejected_because"),
                        "suspicious": details.get("suspicious"), "timing_unavailable": timing.get("unavailable")},
        }
        deps.store.candidate(deps.run_id, record)
        deps.store.step(deps.run_id, record["iteration"], "profiler", f"{record['id']}: {record['status']}"
                        + (f", {record['speedup']:.2f}x" if record["speedup"] is not None else ""),
                        {"candidate": record["id"], "bound": record["bound"], "roofline_fraction": record["roofline_fraction"]},
                        key=record["id"])
        deps.on_event("profiler", {"candidate": record})
        records.append(record)
    return {"candidates": records}
