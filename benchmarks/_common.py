"""Pieces the benchmark scripts share (run as `python benchmarks/NAME.py`: this folder is on sys.path)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path


def run_as_judged() -> None:
    """Start this script again, unless it was, in the environment the harness gives the processes it times:
    malloc's thresholds (read when a process starts: without them torch's convolutions page-fault, 8.3 against
    2.4 ms a call measured on 2026-11-27), a runner's OpenMP binding, and torch held to the level
    AGENTKERN_CPU_ISA names (docs/targets.md). Call it first, before torch is imported."""
    from agentkern import cpu_isa
    from agentkern.harness.omp_env import MALLOC_ENV, judge_thread_env, runner_thread_env

    cpu_isa.apply_to_environment()
    wanted = {**runner_thread_env(judge_thread_env(dict(os.environ))), **MALLOC_ENV}
    if wanted != dict(os.environ):
        os.execve(sys.executable, [sys.executable, *sys.argv], wanted)


def load_module(path: Path, name: str):
    """Import the Python file at `path` as module `name` (a problem or a kernel file)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def render_builtin(problem_path: Path, out: Path, params: dict | None = None) -> tuple[str, dict]:
    """Write the built-in policy's C++ kernel for the problem to `out`, with the template's defaults for this
    host's ISA (as the loop picks them, loop/run.py) updated by `params`; returns (family, parameters)."""
    from agentkern.policies.builtin import templates
    from agentkern.policies.builtin.recognize import analyze
    from agentkern.targets.host import cpu_target

    spec = analyze(str(problem_path))
    target = cpu_target()
    features = templates.target_features(target)
    chosen = dict(templates.default_params(spec["family"], "cpp", features))
    chosen.update({k: v for k, v in (params or {}).items() if k in chosen})
    out.write_text(templates.render(spec, chosen, "cpp"))
    return spec["family"], chosen
