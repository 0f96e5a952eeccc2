"""`agentkern optimize`: set up a run (or reopen one), drive the graph, write the best kernel out.

The graph is checkpointed after every node with LangGraph's SQLite checkpointer under AGENTKERN_HOME, keyed
by the run id: `--resume RUN_ID` continues a killed run from its last finished node, and the run store
(also SQLite) has every step, model call and candidate written as it happened.
"""

from __future__ import annotations

import dataclasses
import secrets
import shutil
import sqlite3
import time
from pathlib import Path

from agentkern import backends, sizes
from agentkern import candidates as population
from agentkern import targets as T
from agentkern.config import home
from agentkern.errors import UserError
from agentkern.kb.retrieve import Retriever
from agentkern.loop import winning_params
from agentkern.loop.deps import Deps, OptimizeOptions
from agentkern.loop.state import RunState
from agentkern.policies.base import Policy
from agentkern.problems import load_problem
from agentkern.traces import RunStore
from agentkern.traces.store import winner_row
from agentkern.types import Draft, EvalOptions, OpSpec, RunResult, Target, Verdict


def new_run_id(problem: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{Path(problem).stem}-{secrets.token_hex(3)}"


def open_store() -> RunStore:
    return RunStore(home() / "runs.db")


def _checkpointer():
    from langgraph.checkpoint.sqlite import SqliteSaver

    return SqliteSaver(sqlite3.connect(home() / "checkpoints.db", check_same_thread=False))


def make_policy(
    opts: OptimizeOptions,
    problem_path: Path,
    backend: str,
    store: RunStore,
    run_id: str,
    target_name: str | None = None,
    features: frozenset | None = None,
) -> Policy:
    from agentkern.models import get_model
    from agentkern.policies.start import check_choice

    check_choice(opts.start_from)  # said for a built-in run too, where it is not used
    model = get_model(opts.model, opts.api_base)
    if model is None:
        from agentkern.policies.builtin.analysis import analyze_problem
        from agentkern.policies.builtin.policy import BuiltinPolicy

        spec = analyze_problem(problem_path, size=opts.size)
        if spec.get("family") and not _has_template(spec["family"], backend):
            other = _other_backend_with_template(spec["family"], backend)
            hint = f"use --backend {other}, or --model with an LLM" if other else "use --model with an LLM"
            cpu, gpu = (backends.get(backends.default_for(kind)).display for kind in ("cpu", "gpu"))
            raise UserError(
                f"the built-in model has no {backend} template for {spec['family']} (it writes {cpu} for "
                f"--target cpu and {gpu} for GPUs); {hint}"
            )
        if spec.get("family"):
            from agentkern.policies.builtin.templates import why_not_renderable

            why = why_not_renderable(spec, backend)
            if why:
                raise UserError(f"the built-in model cannot write this problem: {why}; use --model with an LLM")
        if not spec.get("family"):
            raise UserError(
                f"the built-in model does not recognise this problem ({spec.get('reason')}); "
                "use --model with an LLM (e.g. --model openai/gpt-4o)"
            )
        from agentkern.kb.ingest import best_run_params

        known = best_run_params(Path(problem_path).stem, target_name, backend) if target_name else None
        return BuiltinPolicy(spec, backend, seed=opts.seed, start=known, features=features)
    from agentkern.models.context import context_window
    from agentkern.policies.start import choose

    starter, start_note = choose(opts.start_from, Path(problem_path), target_name or "", backend, opts.size, features)
    window, window_from = context_window(model, opts.context_window)
    setup = {"start_from": opts.start_from, "start": start_note, "context_window": window, "window_from": window_from}
    store.step(run_id, 0, "setup", f"start {start_note}; context window {window} tokens ({window_from})", setup)
    return llm_policy(model, store, run_id, window=window, window_from=window_from, starter=starter)


def _host_features(target: Target, backend: str) -> frozenset | None:
    """CPU candidates (C++) are compiled for this host (-march=native, or the level AGENTKERN_CPU_ISA names): only
    the features the target reports count."""
    if backends.get(backend).device_kind != "cpu" or target.kind != "cpu":
        return None
    from agentkern.policies.builtin import templates

    return templates.target_features(target)


def _has_template(family: str, backend: str) -> bool:
    from agentkern.policies.builtin import templates

    try:
        templates.default_params(family, backend)
    except ValueError:
        return False
    return True


def _other_backend_with_template(family: str, backend: str) -> str | None:
    """Another backend for the same kind of target whose built-in template covers the family, if any."""
    kind = backends.get(backend).device_kind
    others = [b.name for b in backends.all() if b.device_kind == kind and b.name != backend]
    return next((name for name in others if _has_template(family, name)), None)


def llm_policy(model, store: RunStore, run_id: str, window=None, window_from: str = "", starter=None) -> Policy:
    from agentkern.policies.llm import LLMPolicy

    def record(agent, iteration, prompt, reply, error, retrieved=None, notes=None):
        store.model_call(
            run_id,
            iteration,
            agent,
            model.name,
            prompt,
            reply.text if reply else None,
            getattr(reply, "prompt_tokens", 0),
            getattr(reply, "completion_tokens", 0),
            getattr(reply, "cost_usd", 0.0),
            getattr(reply, "latency_s", 0.0),
            error,
            retrieved,
            notes,
        )

    return LLMPolicy(model, record, window=window, window_source=window_from, starter=starter)


def prepare(
    opts: OptimizeOptions,
    store: RunStore,
    run_id: str,
    policy: Policy | None = None,
    evaluate=None,
    on_event=None,
    executor=None,
) -> Deps:
    """The run's dependencies. Candidates are evaluated by `evaluate` when given (tests' stand-ins), else
    by `executor`, else by a new executor made from the options (the caller closes deps.executor)."""
    problem = load_problem(opts.problem)
    target = T.get_target(opts.target)
    # Resolved once for the run: the analysis, every candidate and the counters use the same size.
    size, size_note = sizes.choose(
        opts.size, target, T.is_present(target), sizes.declared_sizes(problem.tree), problem.path.name
    )
    opts = dataclasses.replace(opts, size=size)
    backend = opts.backend or backends.default_for(target.kind)
    if backend not in backends.names():
        *others, last = backends.names()
        raise UserError(f"--backend must be {', '.join(others)} or {last}, not {backend!r}")
    if backends.get(backend).device_kind != target.kind:
        raise UserError(backends.get(backend).wrong_target)
    policy = policy or make_policy(
        opts, problem.path, backend, store, run_id, target.name, _host_features(target, backend)
    )
    model = getattr(policy, "model", None)
    if on_event is not None and hasattr(model, "on_progress"):  # a streamed reply's progress, for the live view
        model.on_progress = lambda chunks: on_event("model", {"chunks": chunks})
    # Last: a Ray instance is not started for a run that the checks above refuse.
    counters = None
    if evaluate is None:
        from agentkern.executors import make_executor
        from agentkern.harness.evaluate import hardware_counters

        executor = executor or make_executor(opts.executor, opts.workers, opts.ray_address, target.kind, target.name)
        evaluate = executor.evaluate

        def counters(problem_path, path):
            return hardware_counters(problem_path, path, target.name, EvalOptions(size=size))

    return Deps(
        run_id=run_id,
        options=opts,
        problem_path=problem.path,
        problem_source=problem.source,
        target=target,
        backend=backend,
        policy=policy,
        evaluate=evaluate,
        eval_options=EvalOptions(size=size),
        store=store,
        run_dir=home() / "runs" / run_id,
        on_event=on_event or (lambda kind, data: None),
        predictor=make_predictor(target, policy, problem.path, size),
        counters=counters,
        size_note=size_note,
        retriever=Retriever(),  # opens the knowledge base on first use, by a policy that reads it (an LLM)
        executor=executor,
    )


def make_predictor(target: Target, policy: Policy, problem_path: Path, size: str | None = None):
    """The cost model for a GPU target that is not on this machine (None when timings can be measured).

    It needs the problem's spec: the built-in policy has it; for an LLM run it is computed on first use
    (one sandboxed analysis), and a problem the recogniser does not understand is priced from its roofline."""
    if target.kind != "gpu" or T.is_present(target):
        return None
    from agentkern.targets import costmodel

    spec_cache: dict = {}

    def spec() -> OpSpec | None:
        if "spec" not in spec_cache:
            spec_cache["spec"] = getattr(policy, "spec", None)
            if spec_cache["spec"] is None:
                from agentkern.policies.builtin.analysis import analyze_problem

                try:
                    spec_cache["spec"] = analyze_problem(problem_path, size=size)
                except UserError:
                    spec_cache["spec"] = None
        return spec_cache["spec"]

    def predict(draft: Draft, verdict: Verdict):
        details = verdict.get("details", {})
        compiled = details.get("prediction") or {}
        if compiled.get("kernel_ms"):  # the harness compiled it for the target and priced that (kernel_model.py)
            return costmodel.Prediction.from_json(compiled)
        return costmodel.predict(target, spec(), draft.get("params") or None, details.get("work") or {})

    return predict


def run(
    opts: OptimizeOptions,
    resume: str | None = None,
    policy: Policy | None = None,
    evaluate=None,
    on_event=None,
    checkpointer=None,
    executor=None,
) -> RunResult:
    """One optimisation run. `executor`: an agentkern.executors.Executor shared with the caller (bench runs
    several problems on one); without it the run makes its own from opts and closes it at the end."""
    store = open_store()
    if resume:
        saved = store.run(resume)
        if saved is None:
            raise UserError(f"no run {resume!r} in {store.path}")
        import json

        opts = OptimizeOptions(**{**json.loads(saved["options"]), **({"out": opts.out} if opts.out else {})})
    run_id = resume or new_run_id(opts.problem)
    deps = prepare(opts, store, run_id, policy, evaluate, on_event, executor)
    try:
        return _drive(deps, opts, resume, checkpointer)
    finally:
        if deps.executor is not None and deps.executor is not executor:
            deps.executor.close()


def _drive(deps: Deps, opts: OptimizeOptions, resume: str | None, checkpointer) -> RunResult:
    run_id, store = deps.run_id, deps.store
    if not resume:
        store.start_run(
            run_id,
            str(deps.problem_path),
            deps.target.name,
            deps.backend,
            opts.model or "builtin",
            dataclasses.asdict(opts),
        )
    store.claim_run(run_id)
    try:
        return _invoke(deps, resume, checkpointer)
    except KeyboardInterrupt:
        store.interrupt_run(run_id, "interrupted (Ctrl-C)")
        raise
    except BaseException as exc:
        store.interrupt_run(run_id, f"interrupted: {type(exc).__name__}: {exc}"[:500])
        raise


def _invoke(deps: Deps, resume: str | None, checkpointer) -> RunResult:
    from agentkern.loop.graph import build_graph

    run_id = deps.run_id
    deps.on_event(
        "start",
        {
            "run_id": run_id,
            "resumed": bool(resume),
            "target": deps.target.name,
            "predicted": deps.predictor is not None,
            "size": deps.eval_options.size,
            "size_note": deps.size_note,
        },
    )
    graph = build_graph(checkpointer or _checkpointer())
    config = {"configurable": {"thread_id": run_id}, "recursion_limit": 10_000}
    final = graph.invoke(None if resume else {"iteration": 0, "stage": 1, "candidates": []}, config, context=deps)
    return finish(deps, final)


def per_point(candidates: list, tokens: int, cost_usd: float) -> dict:
    """Tokens and dollars per point of speedup: per 0.01x gained from the run's first correct kernel (the
    starting kernel of --start-from, else the model's first correct one) to its best. None without a gain."""
    first = next((c for c in candidates if c.get("correct") and c.get("speedup") is not None), None)
    best = population.best(candidates)
    points = (best["speedup"] - first["speedup"]) * 100 if first and best else 0.0
    if points <= 0:
        return {"speedup_points": 0.0, "tokens_per_point": None, "cost_per_point_usd": None}
    return {
        "speedup_points": round(points, 2),
        "tokens_per_point": round(tokens / points, 1),
        "cost_per_point_usd": round(cost_usd / points, 6),
    }


def finish(deps: Deps, final: RunState) -> RunResult:
    candidates = final.get("candidates", [])
    best, confirmation = population.best(candidates), final.get("confirmation")
    if confirmation is not None:  # the fastest as timed again, with those figures (nodes/confirm.py)
        best = _confirmed(candidates, confirmation)
    out_path = None
    if best:
        out_dir = Path(deps.options.out) if deps.options.out else deps.run_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        out_path = out_dir / f"best_{Path(deps.problem_path).stem}.py"
        shutil.copyfile(best["path"], out_path)
    stopped = final.get("stopped_because") or "finished"
    deps.store.finish_run(deps.run_id, stopped, best["id"] if best else None, confirmation)
    return {
        "run_id": deps.run_id,
        "best": None
        if best is None
        else {
            "correct": True,
            "speedup": best["speedup"],
            # The search's own timing of it (the same figure when the winner was not timed again)
            "search_speedup": best.get("search_speedup", best["speedup"]),
            "kernel_ms": best["kernel_ms"],
            "reference_ms": best["reference_ms"],
            "path": str(out_path),
            "strategy": best["strategy"],
            "candidate": best["id"],
            "roofline_fraction": best.get("roofline_fraction"),
            # True: the target GPU was not here; the figures come from the cost model, not a measurement.
            "predicted": bool(best.get("predicted")),
            # The size the predicted figures are for (the problem's size constants at its gpu size), else None.
            "predicted_size": ((best.get("verdict") or {}).get("prediction") or {}).get("size"),
        },
        "iterations": final.get("iteration", 0),
        "candidates": len(candidates),
        "correct_candidates": len(population.correct(candidates)),
        "speedup_history": final.get("best_history", []),
        "stopped_because": stopped,
        "tokens": final.get("tokens", 0),
        "cost_usd": final.get("cost_usd", 0.0),
        **per_point(candidates, final.get("tokens", 0), final.get("cost_usd", 0.0)),
        # The parameters the search chose and the measurements behind each (winning_params.py).
        "params_won": winning_params.explain(
            candidates, _measured_on(deps), best, getattr(deps.policy, "read_params", None)
        ),
        "confirmation": confirmation,
        "target": deps.target.name,
        "backend": deps.backend,
        "problem": str(deps.problem_path),
        "size": deps.eval_options.size,
    }


def _confirmed(candidates: list, confirmation: dict) -> dict | None:
    """The confirmed winner's record with its re-timed figures; None when no contender held up."""
    row = winner_row(confirmation)
    record = next((c for c in candidates if row and c["id"] == row["candidate"]), None)
    if record is None:
        return None
    timed = {k: row[k] for k in ("speedup", "kernel_ms", "reference_ms", "roofline_fraction")}
    return {**record, **timed, "search_speedup": record["speedup"]}


def _measured_on(deps: Deps) -> str | None:
    """What the candidates were timed on (targets.measured_on); None when the times were predicted."""
    if deps.predictor is not None:
        return None
    from agentkern.targets import measured_on

    return measured_on(deps.target)
