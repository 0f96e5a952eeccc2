"""Executors run candidate evaluations in parallel: `local` (sandbox workers on this machine) or `ray`."""

from __future__ import annotations

from agentkern.errors import UserError
from agentkern.executors.base import EvalTask, Executor

EXECUTORS = ("local", "ray")


def make_executor(
    kind: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    target_kind: str = "cpu",
    target_name: str | None = None,
) -> Executor:
    """The executor the command line asked for. Bad input (an unknown kind, Ray missing or unreachable)
    raises UserError: one line for the user, no traceback."""
    if kind not in EXECUTORS:
        raise UserError(f"--executor must be local or ray, not {kind!r}")
    if workers is not None and workers < 1:
        raise UserError(f"--workers must be at least 1, not {workers}")
    if ray_address and kind != "ray":
        raise UserError("--ray-address needs --executor ray")
    if kind == "local":
        from agentkern.executors.local import LocalExecutor

        return LocalExecutor(workers or 1)
    from agentkern.executors.ray import RayExecutor

    return RayExecutor(ray_address, workers, target_kind, target_name)


__all__ = ["EXECUTORS", "EvalTask", "Executor", "make_executor"]
