"""What the nodes need from the outside world: the graph's runtime context (loop/graph.py), given to each
node as `runtime.context`, and the options of a run."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkern.policies.base import Policy
from agentkern.types import Draft, EvalOptions, EvalResult, Target, Verdict

if TYPE_CHECKING:  # for the annotations only: the loop imports these where it uses them
    from agentkern.executors.base import Executor
    from agentkern.targets.costmodel import Prediction
    from agentkern.traces import RunStore


@dataclass
class OptimizeOptions:
    problem: str
    target: str = "auto"
    backend: str | None = None  # cpp | triton | cuda; default from the target
    model: str | None = None  # litellm model string; None or "builtin": the built-in policy
    api_base: str | None = None
    # An LLM run: the model's context window in tokens (None: litellm's figure, the server's, else 4096) and
    # where its first kernel comes from (policies/start.py: auto | exemplar | builtin | scratch)
    context_window: int | None = None
    start_from: str = "auto"
    max_iters: int = 8
    patience: int = 3
    min_gain: float = 0.01
    k: int | None = None  # speedup@k looks at the first k candidates; None: all
    beam: int = 2
    time_budget_s: float | None = None
    max_cost: float | None = None
    max_tokens: int | None = None
    # Stop once the best kernel reaches this fraction of the roofline bound (KernelAgent's speed-of-light
    # stop); None: only the other stop rules
    stop_at_roofline: float | None = 0.95
    # Once the search stops, its best candidates are timed again for this many seconds each and the fastest
    # as re-timed wins (loop/nodes/confirm.py); None or 0: the search's own figures are reported
    confirm_budget_s: float | None = 2.0
    seed: int = 0
    out: str | None = None
    size: str | None = None  # the problem's size, cpu | gpu (agentkern/sizes.py); None: the target picks
    # Where candidates are evaluated (agentkern/executors/): local sandbox workers or a Ray cluster
    executor: str = "local"
    workers: int | None = None  # evaluations at once; None: 1 locally, the cluster's CPUs (or GPUs) on Ray
    ray_address: str | None = None  # an existing Ray cluster; None: a local Ray instance for the run


@dataclass
class Deps:
    run_id: str
    options: OptimizeOptions
    problem_path: Path
    problem_source: str
    target: Target
    backend: str
    policy: Policy  # the built-in policy, an LLM's (agentkern/policies/), or a test's stand-in
    # (problem_path, solution_path, target name, options) -> verdict: the executor's, or a fake in tests
    evaluate: Callable[..., EvalResult]
    eval_options: EvalOptions
    store: RunStore
    run_dir: Path
    on_event: Callable[[str, dict], None] = field(default=lambda kind, data: None)
    clock: Callable[[], float] = time.time
    # (draft, verdict) -> costmodel.Prediction, when the target GPU is absent and speeds must be predicted
    predictor: Callable[[Draft, Verdict], Prediction] | None = None
    # (problem_path, solution_path) -> perf/ncu counters for a new best kernel; None: not collected
    counters: Callable[[str, str], dict[str, Any]] | None = None
    # (problem_source, target, backend, name) -> documents from the knowledge base (agentkern.kb.Retriever);
    # None: the prompts get no reference material
    retriever: Callable[..., list[dict[str, Any]]] | None = None
    # Why the problem runs at a size the user did not ask for (a GPU target that is not here: cpu sizes)
    size_note: str | None = None
    # agentkern.executors.Executor that evaluates the beam's candidates in parallel; None: `evaluate`, in turn
    executor: Executor | None = None
