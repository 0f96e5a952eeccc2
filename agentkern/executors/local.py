"""The local executor (the default): N sandbox workers on this machine, `--workers N`.

N threads in agentkern's process each drive one evaluation at a time; the evaluation itself runs in a
fresh sandboxed child process (harness/sandbox.py), so the threads only wait on children and N of them cost
nothing. Each slot keeps its own WarmPool spare (a worker that has already imported torch), so parallel
evaluations do not queue behind one spare.

Compiling and correctness checks of the N evaluations overlap; their timing phases do not: each takes the
device's timing lock (harness/device_lock.py) in the worker.
"""

from __future__ import annotations

import concurrent.futures
import queue
from collections.abc import Callable

from agentkern.executors.base import EvalTask, Executor, evaluate_with_retry
from agentkern.types import EvalResult


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, workers: int = 1, evaluate: Callable[..., EvalResult] | None = None) -> None:
        """`evaluate`: the harness's evaluate (default), or a stand-in with its signature (tests)."""
        if workers < 1:
            from agentkern.errors import UserError

            raise UserError(f"--workers must be at least 1, not {workers}")
        self.capacity = workers
        self._evaluate = evaluate
        self._threads = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agentkern-eval")
        self._pools: queue.Queue = queue.Queue()
        if evaluate is None:
            from agentkern.config import home
            from agentkern.harness.sandbox import WarmPool

            for _ in range(workers):
                self._pools.put(WarmPool(home() / "spares"))

    def submit(self, task: EvalTask) -> concurrent.futures.Future:
        return self._threads.submit(self._run, task)

    def _run(self, task: EvalTask) -> EvalResult:
        if self._evaluate is not None:
            return evaluate_with_retry(task, self._evaluate)
        from agentkern.harness.evaluate import evaluate

        # At most `workers` tasks run at once (the thread pool's size), so a pool is always free here.
        pool = self._pools.get()
        try:
            return evaluate_with_retry(task, evaluate, pool=pool)
        finally:
            self._pools.put(pool)

    def describe(self) -> str:
        return f"local executor, {self.capacity} worker{'s' if self.capacity != 1 else ''}"

    def close(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)
        while not self._pools.empty():
            self._pools.get_nowait().close()
