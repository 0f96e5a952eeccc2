"""Setting up a sandboxed job, in agentkern's own process: where it runs, its environment, limits, work
folder and seeds, and one `run_job` that every harness mode (evaluate, the PTX check, the torch.compile
baseline, hardware counters) goes through, and `verdict_of` that turns what came back into an EvalResult.
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from agentkern import backends, sizes
from agentkern import targets as T
from agentkern.config import cache_dir, home
from agentkern.errors import UserError
from agentkern.harness.deaths import death_details, describe_death, worker_lost
from agentkern.harness.omp_env import MALLOC_ENV, judge_thread_env
from agentkern.harness.sandbox import SandboxOutcome, WarmPool, run_worker
from agentkern.helpers import one_line
from agentkern.types import EvalOptions, EvalResult, Target

GPU_FLUSH_BYTES = 256 * 2**20  # Triton's do_bench flushes L2 with a 256 MB buffer
HONEYPOT_SEED = 42


def _backend(name: str) -> backends.Backend | None:
    return backends.get(name) if name in backends.names() else None  # None: "torch", no kernel of its own


def device_plan(target: Target, backend: str) -> tuple[str, str]:
    """(device, timing) for a backend on a target; timing is "measure" or why it is unavailable."""
    b = _backend(backend)
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


def env(device: str, backend: str, threads: int | None, workdir: Path) -> dict[str, str]:
    job_env = dict(os.environ)
    # load_inline needs ninja, which pip puts beside this interpreter: reachable even when the venv is
    # not activated (`.venv/bin/agentkern eval ...`).
    job_env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), job_env.get("PATH", "")])
    # Every backend's caches, whichever this solution uses: a spare worker serves any backend.
    job_env.update({var: str(cache_dir(kind)) for b in backends.all() for var, kind in b.cache_env.items()})
    job_env.update(
        PYTHONDONTWRITEBYTECODE="1",
        TMPDIR=str(workdir),
        **MALLOC_ENV,
    )
    if threads:
        job_env["OMP_NUM_THREADS"] = str(threads)
    job_env = judge_thread_env(job_env)  # the runners get the user's OpenMP settings back (runners.runner_env)
    b = _backend(backend)
    if b is not None and device == "cpu" and b.device_kind == "gpu":
        job_env.update(b.interpreter_env)  # read at import (TRITON_INTERPRET): before the candidate's kernels exist
    return job_env


def flush_bytes(target: Target, device: str) -> int:
    if device == "cuda":
        return max(GPU_FLUSH_BYTES, int(2 * (target.l2_mb or 0) * 2**20))
    return int(2 * (target.l3_mb or target.l2_mb or 32) * 2**20)


def limits(opts: EvalOptions) -> dict[str, float]:
    return {
        "compile_timeout_s": opts.compile_timeout_s,
        "run_timeout_s": opts.run_timeout_s,
        "memory_limit_gb": opts.memory_limit_gb,
        "output_limit_mb": opts.output_limit_mb,
    }


def seeds(opts: EvalOptions) -> list[int]:
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


def work_folder(kind: str, stem: str) -> Path:
    """AGENTKERN_HOME/<kind>/<time>-<stem>-<random>: evals, baselines, profiles. Never reused."""
    return home() / kind / f"{time.strftime('%Y%m%d-%H%M%S')}-{stem}-{secrets.token_hex(4)}"


@dataclass
class Job:
    workdir: Path
    limits: dict[str, float]
    outcome: SandboxOutcome


def run_job(
    request: dict,
    workdir: Path,
    job_env: dict[str, str],
    opts: EvalOptions | None = None,
    pool: WarmPool | None = None,
    job_limits: dict[str, float] | None = None,
    prefix: list[str] | tuple = (),
) -> Job:
    """Run one request in a sandboxed worker under the options' limits (or `job_limits`)."""
    job_limits = job_limits or limits(opts or EvalOptions())
    return Job(workdir, job_limits, run_worker(request, workdir, job_env, job_limits, pool, prefix))


def verdict_of(job: Job, base: dict) -> EvalResult:
    """The worker's result as an EvalResult (details: `base` + what the worker reported), or, when it left
    none, how it died (timeout, crash, memory; `worker_lost` when killed from outside)."""
    outcome = job.outcome
    if outcome.result is None:
        status, error = describe_death(outcome, job.limits)
        result = EvalResult(
            status, False, error=error, details={**base, "log_tail": outcome.log, **death_details(outcome)}
        )
        if worker_lost(outcome):
            result.details["worker_lost"] = True
        return result
    raw = outcome.result
    return EvalResult(
        raw["status"],
        bool(raw.get("correct")),
        speedup=raw.get("speedup"),
        reference_ms=raw.get("reference_ms"),
        kernel_ms=raw.get("kernel_ms"),
        error=one_line(raw.get("error")),
        details={**base, **raw.get("details", {})},
    )
