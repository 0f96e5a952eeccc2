"""The `agentkern` command line: thin commands over library functions.

Bad input ends in one line on stderr and exit code 2; a verdict, whatever it is, exits 0.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from agentkern.errors import UserError

app = typer.Typer(
    name="agentkern",
    help="Generate and optimise compute kernels with LLM agents, judged by a harness that cannot be fooled.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _parse_tolerances(pairs: list[str]) -> dict[str, float]:
    parsed = {}
    for pair in pairs:
        dtype, sep, value = pair.partition("=")
        try:
            parsed[dtype.strip().removeprefix("torch.")] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise UserError(f"--tol expects DTYPE=VALUE (e.g. float32=1e-3), got {pair!r}")
    return parsed


@app.command("eval")
def eval_command(
    problem: Annotated[
        str, typer.Argument(help="Problem: an op name from kernels_dataset (softmax, matmul, ...) or a path.")
    ],
    solution: Annotated[str, typer.Argument(help="Solution file defining ModelNew.")],
    target: Annotated[
        str, typer.Option("--target", "-t", help="cpu, a100, h100, h200, l4, l40s, rtx4090, or auto.")
    ] = "auto",
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object (stable keys).")] = False,
    trials: Annotated[int, typer.Option(min=1, help="Correctness trials, each with its own seed.")] = 5,
    seed: Annotated[
        int | None, typer.Option(help="First seed (default: fresh random seeds, recorded in the result).")
    ] = None,
    mode: Annotated[
        str, typer.Option(help="Timing mode: offline (back to back) or server (cold caches, random gaps).")
    ] = "offline",
    tol: Annotated[list[str], typer.Option(help="Tolerance override DTYPE=VALUE (atol=rtol), repeatable.")] = [],
    threads: Annotated[
        int | None, typer.Option(min=1, help="CPU threads for both reference and kernel (default: all cores).")
    ] = None,
    compile_timeout: Annotated[float, typer.Option(help="Seconds allowed to import/compile the candidate.")] = 300.0,
    run_timeout: Annotated[float, typer.Option(help="Seconds allowed for the correctness and timing phases.")] = 120.0,
    memory_limit: Annotated[float, typer.Option(help="GiB of resident memory for the sandbox.")] = 8.0,
    no_timing: Annotated[bool, typer.Option("--no-timing", help="Check correctness only.")] = False,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the sandbox's work folder even on success.")] = False,
    size: Annotated[
        str | None, typer.Option(help="Problem size: cpu or gpu (the problem's SIZES; default: the target picks).")
    ] = None,
) -> None:
    """Judge a candidate kernel: correct? how fast? honest?"""
    from agentkern.harness import evaluate
    from agentkern.types import EvalOptions

    if mode not in ("offline", "server"):
        raise UserError(f"--mode must be offline or server, not {mode!r}")
    opts = EvalOptions(
        trials=trials,
        seed=seed,
        mode=mode,
        threads=threads,
        compile_timeout_s=compile_timeout,
        run_timeout_s=run_timeout,
        memory_limit_gb=memory_limit,
        check_timing=not no_timing,
        size=size,
    )
    opts.tolerances.update(_parse_tolerances(tol))
    if json_out or not sys.stdout.isatty():
        result = evaluate(problem, solution, target, opts, keep_workdir=keep)
    else:
        with err.status(f"evaluating {solution} against {problem} on {target} ..."):
            result = evaluate(problem, solution, target, opts, keep_workdir=keep)
    if json_out:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        from agentkern.verdict_view import print_eval

        print_eval(out, result)


# Shared by `optimize` and `bench` (agentkern/executors/).
Workers = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Evaluations at once (default: 1 locally; with --executor ray, the cluster's CPUs, or GPUs for a GPU target).",
    ),
]
Executor = Annotated[
    str,
    typer.Option(
        help="Where candidates are evaluated: local (sandbox workers here) or ray (a Ray cluster; needs the package's ray extra)."
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        help="An existing Ray cluster (HOST:6379 or ray://HOST:10001) for --executor ray; default: a local Ray instance."
    ),
]


@app.command("optimize")
def optimize_command(
    problem: Annotated[
        str | None,
        typer.Argument(
            help="An op name from kernels_dataset (softmax, matmul, ...) or a problem file; not needed with --resume."
        ),
    ] = None,
    target: Annotated[
        str, typer.Option("--target", "-t", help="cpu, a100, h100, h200, l4, l40s, rtx4090, or auto.")
    ] = "auto",
    backend: Annotated[
        str | None, typer.Option(help="cpp, triton or cuda (default: cpp on a CPU, triton on a GPU).")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="A litellm model string (openai/..., anthropic/..., ollama/...); default: the built-in policy."
        ),
    ] = None,
    api_base: Annotated[
        str | None, typer.Option(help="Base URL of an OpenAI-compatible server (vLLM, llama.cpp, ...).")
    ] = None,
    max_iters: Annotated[int, typer.Option(min=1, help="Iterations at most.")] = 8,
    patience: Annotated[
        int, typer.Option(min=1, help="Stop after this many iterations without a gain of --min-gain.")
    ] = 3,
    min_gain: Annotated[
        float, typer.Option(min=0.0, help="Relative gain in speedup@k that counts as progress.")
    ] = 0.01,
    k: Annotated[
        int | None, typer.Option(min=1, help="speedup@k looks at the first k candidates (default: all).")
    ] = None,
    beam: Annotated[int, typer.Option(min=1, help="Candidates per iteration.")] = 2,
    time_budget: Annotated[float | None, typer.Option(help="Seconds for the whole run.")] = None,
    max_cost: Annotated[float | None, typer.Option(help="Dollars of model calls at most.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Model tokens at most.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the built-in policy's search.")] = 0,
    out_dir: Annotated[
        str | None, typer.Option("--out", help="Folder for the best kernel (default: AGENTKERN_HOME/runs/RUN_ID).")
    ] = None,
    resume: Annotated[str | None, typer.Option(help="Continue a run that was interrupted.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object at the end.")] = False,
    size: Annotated[
        str | None, typer.Option(help="Problem size: cpu or gpu (the problem's SIZES; default: the target picks).")
    ] = None,
    workers: Workers = None,
    executor: Executor = "local",
    ray_address: RayAddress = None,
) -> None:
    """Run the planner/coder/compiler/profiler/critic loop and keep the fastest correct kernel."""
    from agentkern.loop import run as optimize
    from agentkern.loop.deps import OptimizeOptions
    from agentkern.loop.progress import progress_for

    if problem is None and resume is None:
        raise UserError(
            "say which problem to optimise (an op name such as softmax, or a problem file), or --resume RUN_ID"
        )
    opts = OptimizeOptions(
        problem=problem or "",
        target=target,
        backend=backend,
        model=model,
        api_base=api_base,
        max_iters=max_iters,
        patience=patience,
        min_gain=min_gain,
        k=k,
        beam=beam,
        time_budget_s=time_budget,
        max_cost=max_cost,
        max_tokens=max_tokens,
        seed=seed,
        out=out_dir,
        size=size,
        executor=executor,
        workers=workers,
        ray_address=ray_address,
    )
    with progress_for(f"agentkern optimize {problem or resume}", json_out) as progress:
        result = optimize.run(opts, resume=resume, on_event=progress)
    if json_out:
        print(json.dumps(result, indent=2, default=str))
        return
    best = result["best"]
    out.print(
        f"run {result['run_id']}: {result['iterations']} iterations, {result['candidates']} candidates; "
        f"stopped: {result['stopped_because']}",
        highlight=False,
    )
    if best and best.get("predicted"):
        out.print(
            f"[bold cyan]best {best['speedup']:.2f}x predicted, not measured[/] ({best['strategy']}): correct in the "
            f"Triton interpreter; the cost model puts it at {best['kernel_ms']:.4g} ms vs {best['reference_ms']:.4g} ms "
            f"on {result['target']}. Re-time it there: agentkern eval {result['problem']} {best['path']} "
            f"--target {result['target']}",
            highlight=False,
        )
    elif best:
        out.print(
            f"[bold green]best {best['speedup']:.2f}x[/] ({best['strategy']}), {best['kernel_ms']:.4g} ms vs "
            f"{best['reference_ms']:.4g} ms: {best['path']}",
            highlight=False,
        )
    else:
        out.print("[bold yellow]no correct candidate found[/]", highlight=False)


@app.command("targets")
def targets_command(
    json_out: Annotated[bool, typer.Option("--json", help="Print the catalog as JSON.")] = False,
) -> None:
    """List the hardware targets, their published figures and where each comes from."""
    from agentkern.targets import list_targets, target_summary_rows

    targets = list_targets()
    if json_out:
        print(json.dumps([t.to_json() for t in targets], indent=2))
        return
    rows = target_summary_rows(targets)
    table = Table(title="agentkern targets (dense peaks; sources: agentkern targets --json)")
    for key in rows[0]:
        table.add_column(key)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row.values()))
    out.print(table)


from agentkern.kb.cli import app as kb_app  # noqa: E402  (a sub-app; it imports chromadb only when run)

app.add_typer(kb_app, name="kb")

from agentkern.bench.cli import app as bench_app  # noqa: E402  (imports torch and the harness only when run)

app.add_typer(bench_app, name="bench")

from agentkern.traces.cli import app as traces_app  # noqa: E402  (reads the run store only when run)

app.add_typer(traces_app, name="traces")


def main() -> None:
    try:
        app()
    except UserError as exc:
        # One line, never wrapped: CI logs and scripts read it.
        err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted", soft_wrap=True)
        sys.exit(130)
    except Exception as exc:  # a bug in agentkern itself: say so in one line, keep the traceback in a file
        import traceback

        from agentkern.config import home

        log = home() / "logs" / "crash.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(traceback.format_exc())
        err.print(
            f"[bold red]internal error:[/] {type(exc).__name__}: {exc} (traceback in {log})",
            highlight=False,
            soft_wrap=True,
        )
        sys.exit(1)
