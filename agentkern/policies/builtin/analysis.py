"""Parent side of problem analysis: `analyze_problem(path)` runs recognize.analyze in the sandbox.

Loading a problem executes its code (and imports torch), so, like a candidate, it happens in a fresh
worker process (`python -m agentkern.harness.worker`, mode "analyze") with time and memory limits, never in
the agentkern process.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from agentkern.errors import UserError
from agentkern.helpers import one_line
from agentkern.problems import load_problem
from agentkern.types import OpSpec

# Tracing takes a few seconds for most problems, minutes for a recurrent network unrolled over its steps
# (KernelBench L3 41_GRUBidirectional at --size small: 108 s to analyse and render on a 2-core host, past 120 s
# when that host was also busy).
LIMITS = {"compile_timeout_s": 300.0, "run_timeout_s": 300.0, "memory_limit_gb": 8.0}


def analyze_problem(problem_path: Path | str, limits: dict | None = None, size: str | None = None) -> OpSpec:
    """The problem's OpSpec (see recognize.py) at `size` (agentkern/sizes.py; None: as written). A problem
    that cannot be loaded raises UserError (one line); one that loads but is not understood gives a spec
    with family None and the reason."""
    from agentkern.harness import jobs
    from agentkern.harness.deaths import describe_death

    problem = load_problem(str(problem_path))  # bad paths and non-KernelBench files end here
    limits = {**LIMITS, **(limits or {})}
    workdir = jobs.work_folder("analysis", problem.path.stem)
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    request = {"mode": "analyze", "problem_path": str(problem.path), "size": size}
    outcome = jobs.run_job(request, workdir, env, job_limits=limits).outcome
    if outcome.result is None:
        _, error = describe_death(outcome, limits)
        raise UserError(f"cannot analyse {problem.path.name}: {error} (log: {workdir / 'worker.log'})")
    if outcome.result.get("status") != "ok":
        raise UserError(f"cannot load problem {problem.path.name}: {one_line(outcome.result.get('error'))}")
    shutil.rmtree(workdir, ignore_errors=True)
    return outcome.result["spec"]
