"""Run a suite: `agentkern optimize` on each problem, then torch.compile's time for the problems solved.

Nothing a problem does ends the suite: a file that is not a problem, a problem the model cannot handle,
an analysis that times out, an exception inside agentkern itself, each becomes a row with its status and
reason, and the next problem runs. Candidates are sandboxed by the harness as in `agentkern optimize`.
"""

from __future__ import annotations

import json
import os
import re
import time
import traceback
from collections.abc import Callable
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path

from agentkern.bench import compile_speedup
from agentkern.bench.suites import ProblemRef, Suite
from agentkern.errors import UserError
from agentkern.helpers import one_line
from agentkern.types import RunResult

# "suspicious": no correct candidate, and at least one whose outputs matched but whose time beat the roofline
# (harness/roofline_check.py): named apart from "failed", and never counted as solved or fast by the metrics.
ROW_STATUSES = ("ok", "failed", "suspicious", "unsupported", "timeout", "error")


@dataclass
class BenchOptions:
    target: str = "auto"
    model: str | None = None  # None: the built-in policy
    api_base: str | None = None
    max_iters: int = 4
    beam: int = 2
    k: int = 1
    baseline: str = "eager"  # which speedup the metrics use: eager | compile
    size: str | None = None
    seed: int = 0
    time_budget_s: float | None = None  # per problem
    confirm_budget_s: float | None = 2.0  # each problem's best candidates timed again (loop/nodes/confirm.py)
    kernels_dir: str | None = None  # copy each best kernel to KERNELS_DIR/<problem>/
    compile_baseline: bool = True
    executor: str = "local"  # where candidates are evaluated (agentkern/executors/)
    workers: int | None = None  # evaluations (and problems) at once; None: 1 locally, the cluster's size on Ray
    ray_address: str | None = None


def empty_row(ref: ProblemRef) -> dict:
    return {
        "name": ref.name,
        "path": str(ref.path),
        "status": "error",
        "reason": None,
        "speedup_eager": None,
        "search_speedup_eager": None,  # the search's own timing of the winner (speedup_eager: timed again)
        "eager_ms": None,  # eager beside the winner, timed again
        "eager_ms_median": None,  # eager's median time over the run's evaluations (bench/compile_speedup.py)
        "speedup_compile": None,
        "roofline_fraction": None,
        "kernel_path": None,
        "candidates": 0,
        "correct_candidates": 0,
        "suspicious_candidates": 0,
        "busy_host_timings": 0,  # timings still disturbed by other programs after their attempts (harness/host_load.py)
        "core_round_trip_ns": None,  # [least, most] over its timings: how far apart the host put the cores (core_link.py)
        "candidate_speedups": [],
        "run_id": None,
        "predicted": False,
        "size": None,
        "compile_factor": None,  # compile_ms / eager_ms_in_baseline (bench/compile_speedup.py)
        "compile_ms": None,
        "eager_ms_in_baseline": None,
        "eager_ms_in_baselines": [],
        "compile_runs": 0,
        "compile_wall_s": None,
        "compile_note": None,
        "stopped_because": None,
        "wall_s": None,
    }


def classify(message: str) -> str:
    """Status of a problem whose run ended in a UserError (one line meant for a person)."""
    if message.startswith("the built-in model"):  # optimize.make_policy: not recognised / no template
        return "unsupported"
    if "took longer than" in message:  # the sandbox's time limits (analysis, import)
        return "timeout"
    return "error"


def run_problem(ref: ProblemRef, opts: BenchOptions, executor=None, baseline=None) -> dict:
    """One problem's row. `baseline`: its torch.compile baseline, if run_suite measured it already (an
    EvalResult, or the message of the exception it raised); measured here when needed and not given."""
    from agentkern.loop import run as optimize
    from agentkern.loop.deps import OptimizeOptions

    row = empty_row(ref)
    start = time.monotonic()
    out_dir = str(Path(opts.kernels_dir) / re.sub(r"[^\w.-]+", "_", ref.name)) if opts.kernels_dir else None
    try:
        result = optimize.run(
            OptimizeOptions(
                problem=str(ref.path),
                target=opts.target,
                model=opts.model,
                api_base=opts.api_base,
                max_iters=opts.max_iters,
                beam=opts.beam,
                seed=opts.seed,
                time_budget_s=opts.time_budget_s,
                confirm_budget_s=opts.confirm_budget_s,
                size=opts.size,
                out=out_dir,
                executor=opts.executor,
                workers=opts.workers,
                ray_address=opts.ray_address,
            ),
            executor=executor,
        )
    except UserError as exc:
        row.update(status=classify(str(exc)), reason=one_line(str(exc)))
    except Exception as exc:  # noqa: BLE001 - a bug or a broken problem must not end the suite
        row.update(
            status="error", reason=one_line(f"{type(exc).__name__}: {exc}"), traceback=traceback.format_exc()[-2000:]
        )
    else:
        _fill(row, result)
        if row["status"] == "ok" and opts.compile_baseline:
            _add_compile(row, ref, opts, baseline)
    row["wall_s"] = round(time.monotonic() - start, 1)
    return row


def _fill(row: dict, result: RunResult) -> None:
    from agentkern.loop.run import open_store

    store = open_store()
    try:
        candidates = store.candidates(result["run_id"])
    finally:
        store.close()
    best = result.get("best")
    row.update(
        run_id=result["run_id"],
        candidates=len(candidates),
        size=result.get("size"),
        correct_candidates=sum(1 for c in candidates if c["correct"]),
        suspicious_candidates=sum(1 for c in candidates if c["status"] == "suspicious"),
        busy_host_timings=sum(1 for c in candidates if _busy_host(c.get("timing")))
        + sum(1 for r in (result.get("confirmation") or {}).get("rows", []) if r.get("busy_host")),
        candidate_speedups=[c["speedup"] if c["correct"] else None for c in candidates],
        core_round_trip_ns=_round_trip_range(c.get("timing") for c in candidates),
        stopped_because=result.get("stopped_because"),
    )
    if best:
        row.update(
            status="ok",
            speedup_eager=best["speedup"],
            search_speedup_eager=best.get("search_speedup"),
            eager_ms=best.get("reference_ms"),
            eager_ms_median=compile_speedup.eager_median(candidates, result.get("confirmation")),
            roofline_fraction=best.get("roofline_fraction"),
            kernel_path=best["path"],
            predicted=bool(best.get("predicted")),
        )
    else:
        errors = [c["error"] for c in candidates if c.get("error")]
        if candidates and all(
            c["status"] == "no_code" and (c.get("error") or "").startswith("template error") for c in candidates
        ):
            # The built-in model recognised the problem but its templates cannot render it (e.g. a residual rmsnorm):
            # it never got to attempt a kernel, as with a problem it does not recognise.
            row.update(status="unsupported", reason=one_line(f"the built-in model cannot write it: {errors[-1]}"))
            return
        confirmation = result.get("confirmation")
        if confirmation:  # correct candidates, but none held up when timed again (loop/nodes/confirm.py)
            from agentkern.loop.nodes.confirm import summary

            row.update(
                status="failed", reason=one_line(f"no candidate held up when timed again: {summary(confirmation)}")
            )
            return
        suspicious = [c for c in candidates if c["status"] == "suspicious"]
        if suspicious:
            row.update(
                status="suspicious",
                reason=one_line(
                    f"no correct candidate among {len(candidates)}; {len(suspicious)} beat the roofline: "
                    f"{suspicious[-1].get('error')}"
                ),
            )
            return
        row.update(
            status="failed",
            reason=one_line(
                f"no correct candidate among {len(candidates)}" + (f"; last error: {errors[-1]}" if errors else "")
            ),
        )


def _stored_timing(stored_timing: str | None) -> dict:
    try:
        return (json.loads(stored_timing or "null") or {}).get("timing") or {}
    except (ValueError, AttributeError):
        return {}


def _round_trip_range(stored_timings) -> list[float] | None:
    """[least, most] of the cores' round trips (harness/core_link.py) over stored timings, None if none probed."""
    trips = [t for s in stored_timings for t in (_stored_timing(s).get("cores") or {}).get("round_trip_ns") or []]
    return [min(trips), max(trips)] if trips else None


def _busy_host(stored_timing: str | None) -> bool:
    """Whether a stored timing (the run store's JSON) was taken on a host other programs kept busy."""
    return bool((_stored_timing(stored_timing).get("host_load") or {}).get("disturbed"))


def measure_baseline(ref: ProblemRef, opts: BenchOptions):
    """torch.compile's verdict on the problem (an EvalResult), or the message of what went wrong."""
    return compile_speedup.measure_baseline(ref.path, opts.target, opts.size)


def _add_compile(row: dict, ref: ProblemRef, opts: BenchOptions, base=None) -> None:
    """The row's speedup over torch.compile, bridged through eager (bench/compile_speedup.py)."""
    if row["predicted"]:
        row["compile_note"] = "the target GPU is not here: torch.compile not timed"
        return
    if base is None:
        base = measure_baseline(ref, opts)
    compile_speedup.add_compile(row, base, lambda: measure_baseline(ref, opts))


def _baselines_first(problems: list[ProblemRef], opts: BenchOptions, in_flight: int, on_baseline) -> dict:
    """With several problems in flight, their torch.compile baselines are measured first, `in_flight` at a
    time, before any candidate. Inductor compiles on about one core for 10-20 s, holding the device's
    shared lock (harness/device_lock.py): beside another problem's candidates, the first of them queued for
    timing would stall that problem until the compilation ends. Side by side, compilations only wait for
    each other's short timings. One problem at a time (`--workers 1`) keeps the baseline after its loop."""
    from concurrent.futures import ThreadPoolExecutor

    from agentkern.targets import get_target, is_present

    if not opts.compile_baseline or not is_present(get_target(opts.target)):
        return {}
    found: dict[int, object] = {}
    # The baselines run on this machine even when candidates go to a Ray cluster: at most one per core here.
    at_once = max(1, min(in_flight, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="agentkern-baseline") as threads:
        futures = {threads.submit(measure_baseline, ref, opts): i for i, ref in enumerate(problems)}
        for future in as_completed(futures):
            found[futures[future]] = future.result()
            if on_baseline:
                on_baseline(len(found), len(problems), problems[futures[future]].name)
    return found


def run_suite(
    suite: Suite,
    opts: BenchOptions,
    on_row: Callable[[int, int, dict], None] | None = None,
    executor=None,
    on_baseline: Callable[[int, int, str], None] | None = None,
) -> list[dict]:
    """Every problem of the suite; the rows in the suite's order, on_row(done, total, row) as each finishes.

    The problems fan out over one executor: as many problems are in flight as it runs evaluations at once,
    each problem's graph in a thread of this process (the agents wait on models and verdicts), and every
    candidate evaluation of every problem goes to the executor, which decides where and when it runs."""
    from concurrent.futures import ThreadPoolExecutor

    own = executor is None
    if own:
        from agentkern.executors import make_executor
        from agentkern.targets import get_target

        target = get_target(opts.target)
        executor = make_executor(opts.executor, opts.workers, opts.ray_address, target.kind, target.name)
    problems = suite.problems
    rows: list[dict | None] = [None] * len(problems)
    done = 0
    in_flight = max(1, min(executor.capacity, len(problems)))
    try:
        baselines = _baselines_first(problems, opts, in_flight, on_baseline) if in_flight > 1 else {}
        with ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="agentkern-problem") as threads:
            futures = {
                threads.submit(run_problem, ref, opts, executor, baselines.get(i)): i for i, ref in enumerate(problems)
            }
            for future in as_completed(futures):
                rows[futures[future]] = row = future.result()  # run_problem turns every failure into a row
                done += 1
                if on_row:
                    on_row(done, len(problems), row)
    finally:
        if own:
            executor.close()
    return rows
