"""`evaluate(problem, solution, target)`: the harness's front door, in agentkern's own process.

It validates the files (bad input -> UserError), picks the backend and device, runs the static checks,
hands the rest to a sandboxed worker and turns what comes back, or how the worker died, into an
EvalResult. Nothing here imports torch or executes candidate code.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path

from agentkern import backends, sizes
from agentkern import targets as T
from agentkern.config import cache_dir, home
from agentkern.errors import UserError
from agentkern.harness.rejections import Rejected
from agentkern.harness.sandbox import WarmPool, describe_death, run_worker, worker_lost
from agentkern.harness.static_checks import check_source, detect_backend
from agentkern.helpers import one_line, sha256_text
from agentkern.problems import load_problem, load_solution
from agentkern.types import EvalOptions, EvalResult, Target

GPU_FLUSH_BYTES = 256 * 2**20  # Triton's do_bench flushes L2 with a 256 MB buffer


def _plan(target: Target, backend: str) -> tuple[str, str]:
    """(device, timing) for a backend on a target; timing is "measure" or why it is unavailable."""
    b = backends.get(backend) if backend in backends.names() else None  # None: "torch", no kernel of its own
    if b is not None and b.device_kind != target.kind and b.wrong_target_solution is not None:
        raise UserError(b.wrong_target_solution.format(target=target.name))
    interpreted = b is not None and b.without_hardware == "interpreter"
    if target.kind == "cpu":
        if interpreted and b.device_kind != "cpu":
            checked = f"correctness checked with the {b.display} interpreter"
            return "cpu", f"{b.display} has no CPU backend here: {checked}, no timing"
        return "cpu", "measure"
    if T.is_present(target):
        return "cuda", "measure"
    where = f"no {target.display_name} on this machine"
    if interpreted:
        return "cpu", f"{where}: correctness checked with the {b.display} interpreter, timing not measured"
    return "cpu", f"{where}: correctness checked on the CPU, timing not measured"


def _env(device: str, backend: str, threads: int | None, workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    # load_inline needs ninja, which pip puts beside this interpreter: reachable even when the venv is
    # not activated (`.venv/bin/agentkern eval ...`).
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # Every backend's caches, whichever this solution uses: a spare worker serves any backend.
    env.update({var: str(cache_dir(kind)) for b in backends.all() for var, kind in b.cache_env.items()})
    env.update(
        PYTHONDONTWRITEBYTECODE="1",
        TMPDIR=str(workdir),
        # Serve blocks up to 32 MiB (glibc's maximum) from the heap and never trim it, as CUDA's caching
        # allocator does on a GPU: freed blocks are handed out again, so a candidate that returns
        # memory it never wrote gets the reference's poisoned block and is caught. It also spares both
        # sides the page faults of a fresh mmap per call.
        MALLOC_MMAP_THRESHOLD_=str(32 * 2**20),
        MALLOC_TRIM_THRESHOLD_=str(2**40),
    )
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    b = backends.get(backend) if backend in backends.names() else None
    if b is not None and device == "cpu" and b.device_kind == "gpu":
        env.update(b.interpreter_env)  # read at import (TRITON_INTERPRET): before the candidate's kernels exist
    return env


def _flush_bytes(target: Target, device: str) -> int:
    if device == "cuda":
        return max(GPU_FLUSH_BYTES, int(2 * (target.l2_mb or 0) * 2**20))
    return int(2 * (target.l3_mb or target.l2_mb or 32) * 2**20)


def _limits(opts: EvalOptions) -> dict[str, float]:
    return {
        "compile_timeout_s": opts.compile_timeout_s,
        "run_timeout_s": opts.run_timeout_s,
        "memory_limit_gb": opts.memory_limit_gb,
    }


HONEYPOT_SEED = 42


def _seeds(opts: EvalOptions) -> list[int]:
    """One seed per trial. Pinned with --seed: seed, seed+1, ... Otherwise trial 0 uses 42, the seed a
    cheat would guess, and trial 1 perturbs trial 0's inputs in place, so answers precomputed for guessable
    seeds are caught being stale; the other trials use fresh random seeds, so guessing cannot pass."""
    if opts.seed is not None:
        return [opts.seed + i for i in range(opts.trials)]
    start = secrets.randbelow(2**31)
    return [HONEYPOT_SEED] + [start + i for i in range(1, opts.trials)]


def problem_size(prob, opts: EvalOptions, target: Target) -> tuple[str | None, str | None]:
    """(size, note) for a problem on a target: --size, or the target's pick (see agentkern/sizes.py)."""
    return sizes.choose(opts.size, target, T.is_present(target), sizes.declared_sizes(prob.tree), prob.path.name)


def _workdir(solution_path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    key = sha256_text(str(solution_path), secrets.token_hex(4))[:8]
    return home() / "evals" / f"{stamp}-{solution_path.stem}-{key}"


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
    device, timing = _plan(tgt, backend)
    size, size_note = problem_size(prob, opts, tgt)
    base = {
        "backend": backend,
        "target": tgt.name,
        "device": device,
        "problem": str(prob.path),
        "solution": str(sol.path),
        "size": size,
        **({"size_note": size_note} if size_note else {}),
    }

    try:
        compile(sol.source, str(sol.path), "exec")  # parsing runs nothing
    except SyntaxError as exc:
        return EvalResult("compile_error", False, error=f"SyntaxError: line {exc.lineno}: {exc.msg}", details=base)
    try:
        check_source(sol.source, sol.tree)
    except Rejected as rej:
        return EvalResult(
            "rejected",
            False,
            error=f"{rej.code}: {rej.message}",
            details={**base, "rejected_because": rej.code, "check": "static"},
        )

    if device == "cpu" and backend in backends.names() and backends.get(backend).without_hardware == "ptx":
        from agentkern.harness.modes.ptx import compile_check

        return compile_check(sol, tgt, base, opts)

    seeds = _seeds(opts)
    request = {
        "problem_path": str(prob.path),
        "solution_path": str(sol.path),
        "backend": backend,
        "device": device,
        "timing": timing,
        "size": size,
        "options": asdict(opts),
        "seeds": seeds,
        "timing_seed": seeds[-1] + 10_000,
        "flush_bytes": _flush_bytes(tgt, device),
    }
    workdir = _workdir(sol.path)
    limits = _limits(opts)
    outcome = run_worker(request, workdir, _env(device, backend, opts.threads, workdir), limits, pool)
    if outcome.result is None:
        status, error = describe_death(outcome, limits)
        result = EvalResult(
            status, False, error=error, details={**base, "log_tail": outcome.log, "workdir": str(workdir)}
        )
        if worker_lost(outcome):
            result.details["worker_lost"] = True
    else:
        raw = outcome.result
        details = {**base, **raw.get("details", {})}
        result = EvalResult(
            raw["status"],
            bool(raw.get("correct")),
            speedup=raw.get("speedup"),
            reference_ms=raw.get("reference_ms"),
            kernel_ms=raw.get("kernel_ms"),
            error=one_line(raw.get("error")),
            details=details,
        )
        if result.status != "ok":
            details["log_tail"] = outcome.log
        _add_roofline(result, tgt, device)
    result.details["wall_s"] = round(outcome.wall_s, 3)
    result.details["warm_worker"] = outcome.warm
    if not keep_workdir and result.status == "ok":
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        result.details["workdir"] = str(workdir)
    return result


def _add_roofline(result: EvalResult, target: Target, device: str) -> None:
    work = result.details.get("work")
    if not work:
        return
    bound_ms = T.roofline_ms(target, work["flops"], work["bytes"], work["dtype"])
    result.details["roofline_bound_ms"] = bound_ms
    result.details["bound"] = _bound_kind(target, work)
    if result.kernel_ms and bound_ms > 0:
        result.roofline_fraction = bound_ms / result.kernel_ms
        if result.kernel_ms < bound_ms:
            # Faster than the hardware allows: a measurement or a cheat, never a result to celebrate.
            result.details["suspicious"] = (
                f"{result.kernel_ms:.4g} ms beats the {target.name} roofline bound of {bound_ms:.4g} ms"
            )


def _bound_kind(target: Target, work: dict) -> str:
    compute_ms = T.roofline_ms(target, work["flops"], 0.0, work["dtype"])
    memory_ms = T.roofline_ms(target, 0.0, work["bytes"], work["dtype"])
    return "compute" if compute_ms >= memory_ms else "memory"


def hardware_counters(
    problem: str | Path, solution: str | Path, target: str, options: EvalOptions | None = None
) -> dict:
    """perf stat / ncu counters for a kernel that passed `evaluate` on a target that is present
    (agentkern/harness/counters.py); {"available": False, "why": ...} where they cannot be had."""
    from agentkern.harness import counters

    opts = options or EvalOptions()
    tgt = T.get_target(target)
    sol = load_solution(solution)
    device, timing = _plan(tgt, detect_backend(sol.source))
    if timing != "measure":
        return {"available": False, "why": "the target's hardware is not on this machine"}
    workdir = home() / "profiles" / f"{time.strftime('%Y%m%d-%H%M%S')}-{sol.path.stem}-{secrets.token_hex(4)}"
    size, _ = problem_size(load_problem(str(problem)), opts, tgt)
    result = counters.collect(
        str(problem),
        str(sol.path),
        device,
        workdir,
        _env(device, detect_backend(sol.source), opts.threads, workdir),
        size=size,
    )
    if result.get("available"):
        shutil.rmtree(workdir, ignore_errors=True)
    return result
