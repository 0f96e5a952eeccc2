"""`evaluate(problem, solution, target)`: the harness's front door, in agentkern's own process.

It validates the files (bad input -> UserError), picks the backend and device, runs the static checks,
hands the rest to a sandboxed worker (jobs.py) and turns what comes back, or how the worker died, into an
EvalResult. Nothing here imports torch or executes candidate code.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict
from pathlib import Path

from agentkern import backends
from agentkern import targets as T
from agentkern.harness import jobs, roofline_check
from agentkern.harness.rejections import Rejected
from agentkern.harness.sandbox import WarmPool
from agentkern.harness.static_checks import check_source, detect_backend
from agentkern.helpers import SourceTooComplex, compile_python
from agentkern.problems import SourceFile, load_problem, load_solution, syntax_error_text
from agentkern.types import EvalOptions, EvalResult, Target


def evaluate(
    problem: str | Path,
    solution: str | Path,
    target: str = "cpu",
    options: EvalOptions | None = None,
    keep_workdir: bool = False,
    pool: WarmPool | None = None,
) -> EvalResult:
    """Judge `solution` against `problem` on `target`. Pass a WarmPool when evaluating many candidates in
    a row: each still runs in a fresh process, but one that finished its imports beforehand."""
    opts = options or EvalOptions()
    prob = load_problem(str(problem))
    sol = load_solution(solution)
    tgt = T.get_target(target)
    backend = detect_backend(sol.source)
    device, timing = jobs.device_plan(tgt, backend)
    size, size_note = jobs.problem_size(prob, opts, tgt)
    base = {
        "backend": backend,
        "target": tgt.name,
        "device": device,
        "problem": str(prob.path),
        "solution": str(sol.path),
        "size": size,
        **({"size_note": size_note} if size_note else {}),
    }
    refused = _refused_before_running(sol, base)
    if refused is not None:
        return refused
    if device == "cpu" and backend in backends.names() and backends.get(backend).without_hardware == "ptx":
        from agentkern.harness.modes.ptx import compile_check

        base.pop("size_note", None)  # nothing runs at any size: it is compiled, never run
        return compile_check(sol, tgt, base, opts)

    def judge() -> jobs.Job:
        request = _request(prob, sol, backend, device, timing, size, tgt, opts)
        workdir = jobs.work_folder("evals", sol.path.stem)
        return jobs.run_job(request, workdir, jobs.env(device, backend, opts.threads, workdir), opts, pool)

    def retime() -> EvalResult:
        """The whole evaluation once more (fresh processes, fresh seeds): for a kernel beyond the roofline."""
        again = judge()
        shutil.rmtree(again.workdir, ignore_errors=True)
        return jobs.verdict_of(again, base)

    return _finish(judge(), base, tgt, device, keep_workdir, retime, sol.source)


def _refused_before_running(sol: SourceFile, base: dict) -> EvalResult | None:
    """A verdict from the source alone (a syntax error, a static check), or None: the worker decides."""
    try:
        if sol.error is not None:
            raise sol.error
        compile_python(sol.source, str(sol.path))  # parsing runs nothing
    except SyntaxError as exc:  # SourceTooComplex too: too large, too deeply nested
        kind = "" if isinstance(exc, SourceTooComplex) else "SyntaxError: "
        return EvalResult("compile_error", False, error=kind + syntax_error_text(exc), details=base)
    try:
        check_source(sol.source, sol.tree)
    except Rejected as rej:
        return EvalResult(
            "rejected",
            False,
            error=f"{rej.code}: {rej.message}",
            details={**base, "rejected_because": rej.code, "check": "static"},
        )
    return None


def _request(prob, sol, backend: str, device: str, timing: str, size, tgt: Target, opts: EvalOptions) -> dict:
    seeds = jobs.seeds(opts)
    return {
        "problem_path": str(prob.path),
        "solution_path": str(sol.path),
        "backend": backend,
        "device": device,
        "timing": timing,
        "size": size,
        "options": asdict(opts),
        "seeds": seeds,
        "timing_seed": seeds[-1] + 10_000,
        "flush_bytes": jobs.flush_bytes(tgt, device),
        # A GPU that is not here: after the trials at this size, plan the launches at the gpu size (gpu_plan.py).
        "plan": tgt.kind == "gpu" and timing != "measure" and size != "gpu",
    }


def _finish(
    job: jobs.Job, base: dict, tgt: Target, device: str, keep_workdir: bool, retime=None, source: str | None = None
) -> EvalResult:
    result = jobs.verdict_of(job, base)
    if job.outcome.result is None:
        result.details["workdir"] = str(job.workdir)
    else:
        if source is not None and result.details.get("launches") and tgt.kind == "gpu":
            _compile_for_target(result, source, tgt, job.workdir / "compiled")
        if result.status != "ok":
            result.details["log_tail"] = job.outcome.log
        _add_roofline(result, tgt, device, retime=retime)
    result.details["wall_s"] = round(job.outcome.wall_s, 3)
    result.details["warm_worker"] = job.outcome.warm
    if not keep_workdir and result.status == "ok":
        shutil.rmtree(job.workdir, ignore_errors=True)
    else:
        result.details["workdir"] = str(job.workdir)
    return result


def _compile_for_target(result: EvalResult, source: str, tgt: Target, folder: Path) -> None:
    """The Triton kernels compiled for the target's architecture (triton_compile.py): their resources in
    details.compiled, and a kernel that cannot launch there refused before any GPU sees it."""
    from agentkern.harness.triton_compile import compile_for_target

    plan = result.details.get("plan") or {}
    at_plan = bool(plan.get("launches"))  # the gpu size's launches (gpu_plan.py), else the check size's
    launches = plan["launches"] if at_plan else result.details["launches"]
    compiled = compile_for_target(source, launches, tgt, folder)
    checked_at = result.details.get("check_size") or result.details.get("size")  # where the trials ran
    compiled["size"] = plan["size"] if at_plan else checked_at
    result.details["compiled"] = compiled
    if compiled.get("refused") and result.status in ("ok", "incorrect"):
        result.status, result.correct, result.error = "compile_error", False, compiled["refused"]
        result.speedup = result.kernel_ms = result.reference_ms = None
        result.details["rejected_because"] = "cannot_launch_on_target"
    elif result.correct and "kernels" in compiled:
        at = plan if at_plan else {"eager_ops": plan.get("checked_eager_ops")}
        result.details["prediction"] = _predict(tgt, compiled, at, result.details, len(launches))


def _predict(tgt: Target, compiled: dict, plan: dict, details: dict, launches: int) -> dict:
    """The compiled kernels' predicted times (targets/kernel_model.py), at the size their launches were noted."""
    from agentkern.targets import kernel_model

    work = plan.get("work") or details.get("work") or {}
    try:
        prediction = min(
            (
                kernel_model.predict_compiled(tgt, view, work, plan.get("eager_ops"), launches)
                for view in _configs(compiled)
            ),
            key=lambda p: p.kernel_ms or float("inf"),
        )
    except (KeyError, ValueError, TypeError, ZeroDivisionError) as exc:
        return {"unavailable": f"the model cannot price these kernels: {type(exc).__name__}: {exc}"}
    prediction.size = plan.get("constants") or details.get("check_size") or details.get("size")
    out = prediction.to_json() | {"predicted": True}
    if {"flops", "bytes", "dtype"} <= set(work):  # memory- or compute-bound at the predicted size, not the checked
        out["bound"] = roofline_check.bound_kind(tgt, work)
    return out


def _configs(compiled: dict) -> list[dict]:
    """One view of `compiled` per autotuner config that can launch (the GPU's autotuner keeps the fastest:
    the prediction does too), or `compiled` itself for a kernel that is not autotuned."""
    alternatives = sorted({k["alternative"] for k in compiled["kernels"] if "alternative" in k})
    views = []
    for a in alternatives:
        kernels = [k for k in compiled["kernels"] if _of_config(k, a) and "cannot_launch" not in k and "error" not in k]
        if any(k.get("alternative") == a for k in kernels):
            launches = [x for x in compiled["launches"] if _of_config(x, a)]
            views.append(compiled | {"kernels": kernels, "launches": launches})
    return views or [compiled]


def _of_config(record: dict, config: int) -> bool:
    """A kernel or launch of autotuner config `config`, or one that is not autotuned (it runs in every view)."""
    return record.get("alternative", config) == config


def _add_roofline(result: EvalResult, target: Target, device: str, remeasure=None, retime=None) -> None:
    """The roofline bound on the verdict; a kernel beyond it, once the host is measured again and the kernel
    timed again, is `suspicious` (harness/roofline_check.py)."""
    roofline_check.add_roofline(result, target, remeasure, retime)


def hardware_counters(
    problem: str | Path, solution: str | Path, target: str, options: EvalOptions | None = None
) -> dict:
    """perf stat / ncu counters for a kernel that passed `evaluate` on a target that is present
    (agentkern/harness/counters.py); {"available": False, "why": ...} where they cannot be had."""
    from agentkern.harness import counters

    opts = options or EvalOptions()
    tgt = T.get_target(target)
    sol = load_solution(solution)
    backend = detect_backend(sol.source)
    device, timing = jobs.device_plan(tgt, backend)
    if timing != "measure":
        return {"available": False, "why": "the target's hardware is not on this machine"}
    workdir = jobs.work_folder("profiles", sol.path.stem)
    size, _ = jobs.problem_size(load_problem(str(problem)), opts, tgt)
    job_env = jobs.env(device, backend, opts.threads, workdir)
    result = counters.collect(str(problem), str(sol.path), device, workdir, job_env, size=size)
    if result.get("available"):
        shutil.rmtree(workdir, ignore_errors=True)
    return result
