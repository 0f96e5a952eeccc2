"""Runs for the traces tests, each made once per test session (the builders are cached; every test module's
fixture calls them) so the three traces test modules share two runs:

- `scripted_run`: the LLM policy with a scripted model and the real harness, 2 iterations x 3 candidates:
  a good relu kernel, one that does not build, a reply without code; then a variant of the good kernel, a
  wrong one, and a failed model call. Priced replies, so tokens and cost are recorded.
- `builtin_run`: the built-in policy with a fake evaluator (fast), 3 iterations x 2: candidates with parents.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver
from loop_fakes import is_retiming
from relu_replies import COMPILE_ERROR, GOOD, NO_CODE, WRONG
from support import ROOT, fast_options

from agentkern.loop import run as optimize
from agentkern.loop.deps import OptimizeOptions
from agentkern.models.base import ModelError, Reply
from agentkern.models.scripted import ScriptedModel
from agentkern.types import EvalResult

# The second iteration's kernel: the first one with a schedule clause, so its diff against 001-0 is one line.
GOOD_STATIC = GOOD.replace("#pragma omp parallel for", "#pragma omp parallel for schedule(static)")
STATIC_LINE = "#pragma omp parallel for schedule(static)"


@dataclass(frozen=True)
class TracedRun:
    run_id: str
    db: Path
    result: dict
    workdir: Path

    def best_source(self) -> str:
        """The best kernel's code. Which of the scripted run's two good kernels wins is down to timing noise,
        so tests compare with this, never with one of them."""
        from agentkern.traces.store import RunStore

        row = (
            RunStore(self.db)
            .db.execute(
                "SELECT source FROM candidates WHERE run_id=? AND candidate_id=?",
                (self.run_id, self.result["best"]["candidate"]),
            )
            .fetchone()
        )
        return row[0]


def priced(text: str, cost: float) -> Reply:
    return Reply(
        text=text,
        model="scripted",
        prompt_tokens=1000,
        completion_tokens=len(text) // 4,
        cost_usd=cost,
        latency_s=0.5,
        finish_reason="stop",
    )


def optimize_with_run_id(run_id: str, options: OptimizeOptions, policy, evaluate, workdir: Path) -> dict:
    """optimize.run under a run id chosen beforehand (a scripted policy records its model calls under it),
    checkpointed in `workdir`."""
    original = optimize.new_run_id
    optimize.new_run_id = lambda problem: run_id  # the policy's model-call records and the run share the id
    try:
        return optimize.run(
            options,
            policy=policy,
            evaluate=evaluate,
            checkpointer=SqliteSaver(sqlite3.connect(workdir / "cp.db", check_same_thread=False)),
        )
    finally:
        optimize.new_run_id = original


@functools.cache
def _scripted(workdir: Path) -> TracedRun:
    model = ScriptedModel(
        [
            priced("STRATEGY: relu-omp/basic\nA flat OpenMP loop.", 0.001),
            priced(GOOD, 0.002),
            priced(COMPILE_ERROR, 0.002),
            priced(NO_CODE, 0.002),
            priced("STRATEGY: relu-omp/static\nA static schedule.", 0.001),
            priced(GOOD_STATIC, 0.002),
            priced(WRONG, 0.002),
            ModelError("scripted: the provider is down", model="scripted", kind="server"),
        ]
    )
    store = optimize.open_store()
    run_id = optimize.new_run_id("relu")
    opts = fast_options()

    def evaluate(problem_path, path, target_name, _options):
        from agentkern.harness.evaluate import evaluate as harness_evaluate

        return harness_evaluate(problem_path, path, target_name, opts)

    options = OptimizeOptions(
        problem="relu", target="cpu", model="scripted", beam=3, max_iters=2, patience=5, out=str(workdir / "out")
    )
    result = optimize_with_run_id(run_id, options, optimize.llm_policy(model, store, run_id), evaluate, workdir)
    return TracedRun(run_id, store.path, result, workdir)


@functools.cache
def _builtin(workdir: Path) -> TracedRun:
    calls = []
    first = {}

    def evaluate(problem_path, path, target_name, options):
        """No build, no timing: a verdict made up from the call's position, so the run is fast and its
        figures are known. The third candidate fails. Timed again as the winner (loop/nodes/confirm.py: a
        longer budget), a candidate gets its first verdict back."""
        if is_retiming(options):
            return first[path]
        first[path] = _made_up(calls, path)
        return first[path]

    options = OptimizeOptions(problem="relu", target="cpu", beam=2, max_iters=3, patience=5, out=str(workdir / "out"))
    run_id = optimize.new_run_id("relu") + "-builtin"
    result = optimize_with_run_id(run_id, options, None, evaluate, workdir)
    return TracedRun(run_id, optimize.open_store().path, result, workdir)


def _made_up(calls: list, path) -> EvalResult:
    calls.append(path)
    n = len(calls)
    if n == 3:
        return EvalResult("incorrect", False, error="output differs at [0, 3]", details={"trials": 5})
    kernel_ms = 1.0 / (1.0 + 0.1 * n)
    return EvalResult(
        "ok",
        True,
        speedup=1.0 / kernel_ms,
        reference_ms=1.0,
        kernel_ms=kernel_ms,
        details={"trials": 5, "max_abs_diff": 0.0, "size": "cpu"},
    )


def scripted_run(tmp_path_factory) -> TracedRun:
    return _scripted(_shared_dir(tmp_path_factory, "scripted"))


def builtin_run(tmp_path_factory) -> TracedRun:
    return _builtin(_shared_dir(tmp_path_factory, "builtin"))


def _shared_dir(tmp_path_factory, name: str) -> Path:
    path = tmp_path_factory.getbasetemp() / f"traces-{name}"
    path.mkdir(exist_ok=True)
    return path


def agentkern(*args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    """`agentkern ARGS` in a fresh process, as a user runs it (stdout is a pipe: no pager, no colour)."""
    return subprocess.run(
        [sys.executable, "-m", "agentkern", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, **(env or {})},
        **kwargs,
    )
