"""What an executor is: something that runs candidate evaluations, several at a time, and hands back verdicts.

One candidate evaluation is one task (EvalTask). `submit` returns a concurrent.futures.Future of its
EvalResult, so the graph's compiler node and `agentkern bench` fan work out the same way whichever
executor runs it: `local` (a pool of sandbox workers on this machine, local.py) or `ray` (tasks on a Ray
cluster, ray.py).

Each evaluation already runs in its own sandboxed child process (agentkern/harness/sandbox.py). A worker
that is lost mid-task (killed from outside, the OOM killer, a node going away) costs only that task: it is
run once more, in a fresh worker, and if that one is lost too the task is recorded as failed (status
"crashed", details.attempts = 2) and the run goes on. The retry happens here, below the graph, so the trace
holds one verdict per candidate whatever happened on the way.
"""

from __future__ import annotations

import abc
import concurrent.futures
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentkern.types import EvalOptions, EvalResult

ATTEMPTS = 2  # the first try and one retry


@dataclass
class EvalTask:
    problem_path: str
    solution_path: str
    target: str
    options: EvalOptions = field(default_factory=EvalOptions)


def lost_twice(task: EvalTask, why: str, attempts: int = ATTEMPTS) -> EvalResult:
    """The verdict of a task whose worker was lost on every attempt."""
    return EvalResult(
        "crashed",
        False,
        error=f"evaluation lost {attempts} times ({why}); recorded as failed",
        details={
            "solution": task.solution_path,
            "problem": task.problem_path,
            "attempts": attempts,
            "worker_lost": True,
        },
    )


def evaluate_with_retry(task: EvalTask, evaluate: Callable[..., EvalResult], **kwargs) -> EvalResult:
    """Run `evaluate` on the task; run it once more if its sandbox worker was lost (harness/sandbox.py's
    worker_lost: SIGKILL or SIGTERM from outside). A candidate that crashes by itself (a segfault, an abort,
    the memory limit) gets its verdict the first time: that is a result, not a loss."""
    for attempt in range(1, ATTEMPTS + 1):  # noqa: B007 - read after the loop
        result = evaluate(task.problem_path, task.solution_path, task.target, task.options, **kwargs)
        if not result.details.get("worker_lost"):
            break
    result.details["attempts"] = attempt
    if result.details.get("worker_lost"):
        return lost_twice(task, result.error or "worker killed", attempt)
    return result


class Executor(abc.ABC):
    """Runs EvalTasks. `capacity` is how many it runs at once: `bench` keeps that many problems in flight."""

    name: str = "executor"
    capacity: int = 1

    @abc.abstractmethod
    def submit(self, task: EvalTask) -> concurrent.futures.Future:
        """Start the task; the future's result is an EvalResult."""

    def evaluate(self, problem_path, solution_path, target: str, options: EvalOptions | None = None) -> EvalResult:
        """The harness's evaluate() signature, run through the executor (for callers that want one verdict)."""
        task = EvalTask(str(problem_path), str(solution_path), target, options or EvalOptions())
        return self.submit(task).result()

    def map(self, tasks: list[EvalTask]) -> list[EvalResult]:
        """All tasks at once; the verdicts in the tasks' order."""
        futures = [self.submit(task) for task in tasks]
        return [f.result() for f in futures]

    def describe(self) -> str:
        return f"{self.name} executor, {self.capacity} at a time"

    def close(self) -> None:  # noqa: B027 - most executors hold nothing to release
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def task_files(task: EvalTask) -> dict:
    """The task with its files' contents, for an executor whose workers may not share this file system.
    The problem may be an op name (`softmax`): it is resolved here, where kernels_dataset/ is."""
    from agentkern.problems import load_problem

    problem = load_problem(task.problem_path)
    return {
        "problem_name": problem.path.name,
        "problem_source": problem.source,
        "solution_name": Path(task.solution_path).name,
        "solution_source": Path(task.solution_path).read_text(),
    }
