"""The run store: every agent step, model call and candidate of a run, in SQLite, as it happens."""

from agentkern.traces.store import RunStore

__all__ = ["RunStore"]
