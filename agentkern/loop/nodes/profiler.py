"""Profiler: turns each verdict into a candidate record with what the critic needs beyond a time: the
fraction of the roofline bound reached, and whether the problem is compute- or memory-bound there.

When the target GPU is not on this machine the harness checks correctness but cannot time; the cost model
(deps.predictor, agentkern/targets/costmodel.py) then predicts the times, and the record says so
(`predicted: true`): every such figure is shown and stored as predicted, not measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime

from agentkern import candidates as population
from agentkern.loop.deps import Deps
from agentkern.loop.state import RunState
from agentkern.policies import lineage
from agentkern.traces import evidence
from agentkern.types import Candidate
from agentkern.verdict_view import compiled_line

if TYPE_CHECKING:  # the cost model is loaded by the run that predicts (loop/run.make_predictor)
    from agentkern.targets.costmodel import Prediction


def run(state: RunState, runtime: Runtime[Deps]) -> RunState:
    deps = runtime.context
    records: list[Candidate] = []
    best_before = population.best(state.get("candidates", []))
    for item in state.get("results", []):
        draft, verdict = item["draft"], item["verdict"]
        details = verdict.get("details", {})
        timing = details.get("timing") or {}
        record: Candidate = {
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
            "verdict": {
                "status": verdict["status"],
                "rejected_because": details.get("rejected_because"),
                "suspicious": details.get("suspicious"),
                "timing_unavailable": timing.get("unavailable"),
            },
        }
        if verdict["status"] not in ("ok",):
            record["report"] = lineage.report_of(verdict)  # what the next coder prompt shows of the failure
        if (details.get("compiled") or {}).get("kernels"):
            record["verdict"]["compiled"] = "; ".join(compiled_line(k) for k in details["compiled"]["kernels"])
        if record["predicted"] and record["correct"] and deps.predictor is not None:
            _apply_prediction(record, deps.predictor(draft, verdict), details)
        deps.store.candidate(deps.run_id, record, evidence.from_verdict(verdict, item["path"]))
        deps.store.step(
            deps.run_id,
            record["iteration"],
            "profiler",
            f"{record['id']}: {record['status']}"
            + (f", {record['speedup']:.2f}x" if record["speedup"] is not None else ""),
            {
                "candidate": record["id"],
                "bound": record["bound"],
                "roofline_fraction": record["roofline_fraction"],
                "predicted": record["predicted"],
                "prediction": record["verdict"].get("prediction"),
            },
            key=record["id"],
        )
        records.append(record)
    _profile_new_best(records, best_before, state, deps)
    for record in records:
        deps.on_event("profiler", {"candidate": record})
    return {"candidates": records}


def _profile_new_best(records: list[Candidate], best_before: Candidate | None, state: RunState, deps: Deps) -> None:
    """Hardware counters (perf stat / ncu) for this iteration's candidate that beats the best so far: the
    critic names its bottleneck from them. One profiling run per improvement keeps the cost small."""
    new_best = population.best(records)
    if deps.counters is None or new_best is None or new_best["predicted"]:
        return
    if best_before is not None and new_best["speedup"] <= best_before["speedup"]:
        return
    new_best["counters"] = deps.counters(str(deps.problem_path), new_best["path"])
    deps.store.step(
        deps.run_id,
        new_best["iteration"],
        "profiler",
        f"{new_best['id']}: hardware counters"
        + ("" if new_best["counters"].get("available") else f" unavailable: {new_best['counters'].get('why')}"),
        {"candidate": new_best["id"], "counters": new_best["counters"]},
        key=f"{new_best['id']}-counters",
    )


def _apply_prediction(record: Candidate, prediction: Prediction, details: dict[str, Any]) -> None:
    record["verdict"]["prediction"] = prediction.to_json()
    if not prediction.feasible:  # correct in the interpreter, but would not launch on the target
        record.update(status="infeasible", correct=False, error="predicted: " + "; ".join(prediction.notes))
        return
    record.update(speedup=prediction.speedup, kernel_ms=prediction.kernel_ms, reference_ms=prediction.reference_ms)
    if (details.get("prediction") or {}).get("bound"):  # the compiled kernel's prediction, at the gpu size
        record["bound"] = details["prediction"]["bound"]
    bound_ms = prediction.bound_ms or details.get("roofline_bound_ms")  # at the prediction's size where it has one
    if bound_ms and prediction.kernel_ms:
        record["roofline_fraction"] = bound_ms / prediction.kernel_ms
