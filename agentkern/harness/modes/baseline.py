"""`compile_baseline(problem, target)`: torch.compile(Model) timed against eager Model, in the sandbox.

A trusted harness mode for `agentkern bench` (worker side: baseline_worker.py). A candidate file whose
ModelNew wraps torch.compile is rejected by the anti-cheat guards (patches_runtime: dynamo rewraps
torch.manual_seed; it also starts compile workers), and those guards must stay as they are for
candidates; so the baseline has its own mode, which loads only the problem, never a solution.

The result is an EvalResult with reference_ms = eager, kernel_ms = torch.compile and speedup =
eager / compiled. Inductor's cache lives in AGENTKERN_HOME/cache/inductor, so a problem compiled once
(about 25 s cold on the 2-core development machine, 5 s warm) is cheap the next time.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict
from pathlib import Path

from agentkern import targets as T
from agentkern.config import cache_dir
from agentkern.harness import jobs
from agentkern.problems import load_problem
from agentkern.types import EvalOptions, EvalResult


def compile_baseline(
    problem: str | Path, target: str = "cpu", options: EvalOptions | None = None, keep_workdir: bool = False
) -> EvalResult:
    opts = options or EvalOptions()
    prob = load_problem(str(problem))
    tgt = T.get_target(target)
    size, size_note = jobs.problem_size(prob, opts, tgt)
    base = {
        "backend": "torch.compile",
        "target": tgt.name,
        "problem": str(prob.path),
        "size": size,
        **({"size_note": size_note} if size_note else {}),
    }
    if not T.is_present(tgt):
        return EvalResult(
            "unverified", False, error=f"no {tgt.display_name} on this machine: torch.compile not timed", details=base
        )
    device = "cpu" if tgt.kind == "cpu" else "cuda"
    seeds = jobs.seeds(opts)
    request = {
        "mode": "baseline",
        "problem_path": str(prob.path),
        "backend": "torch.compile",
        "device": device,
        "timing": "measure" if opts.check_timing else "not requested",
        "size": size,
        "options": asdict(opts),
        "seeds": seeds,
        "timing_seed": seeds[-1] + 10_000,
        "flush_bytes": jobs.flush_bytes(tgt, device),
    }
    workdir = jobs.work_folder("baselines", prob.path.stem)
    env = jobs.env(device, "torch", opts.threads, workdir)
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir("inductor"))  # not TMPDIR: the work folder is removed
    job = jobs.run_job(request, workdir, env, opts)  # never a spare: it would lack the inductor cache
    result = jobs.verdict_of(job, base)
    result.details["wall_s"] = round(job.outcome.wall_s, 3)
    if not keep_workdir and result.status == "ok":
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        result.details["workdir"] = str(workdir)
    return result
