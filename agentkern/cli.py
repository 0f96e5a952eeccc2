"""The `agentkern` command line: thin commands over library functions.

Bad input ends in one line on stderr and exit code 2; a verdict, whatever it is, exits 0.
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agentkern.cli_optimize_options import (
    ApiBase,
    Backend,
    Beam,
    ConfirmBudget,
    ContextWindow,
    JsonEnd,
    K,
    MaxCost,
    MaxIters,
    MaxTokens,
    MinGain,
    Model,
    OutDir,
    Patience,
    ProblemArg,
    Resume,
    Seed,
    StartFrom,
    StopAtRoofline,
    TimeBudget,
)
from agentkern.errors import UserError
from agentkern.types import EvalOptions

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


# Shared by `eval` and `optimize`.
Target = Annotated[str, typer.Option("--target", "-t", help="cpu, a100, h100, h200, l4, l40s, rtx4090, or auto.")]
Size = Annotated[
    str | None,
    typer.Option(
        help="Problem size: cpu or gpu (the problem's SIZES; default: the target picks), or small (any problem's size constants halved until it fits this machine)."
    ),
]


def _eval_options(tolerances: list[str], **fields) -> EvalOptions:
    """EvalOptions from `agentkern eval`'s flags; a value out of its set is one clear UserError."""
    if fields["mode"] not in ("offline", "server"):
        raise UserError(f"--mode must be offline or server, not {fields['mode']!r}")
    if fields["second_shape"] not in ("report", "require", "off"):
        raise UserError(f"--second-shape must be report, require or off, not {fields['second_shape']!r}")
    opts = EvalOptions(**fields)
    opts.tolerances.update(_parse_tolerances(tolerances))
    return opts


@app.command("eval")
def eval_command(
    problem: Annotated[
        str, typer.Argument(help="Problem: an op name from kernels_dataset (softmax, matmul, ...) or a path.")
    ],
    solution: Annotated[str, typer.Argument(help="Solution file defining ModelNew.")],
    target: Target = "auto",
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object (stable keys).")] = False,
    trials: Annotated[
        int, typer.Option(min=1, help="Correctness trials, each with its own seed and input distribution.")
    ] = EvalOptions.trials,
    seed: Annotated[
        int | None, typer.Option(help="First seed (default: fresh random seeds, recorded in the result).")
    ] = None,
    second_shape: Annotated[
        str,
        typer.Option(
            help="Trials at a second shape (the problem's size constants changed): report (say when the kernel is "
            "wrong there), require (then it is incorrect) or off."
        ),
    ] = EvalOptions.second_shape,
    mode: Annotated[
        str, typer.Option(help="Timing mode: offline (back to back) or server (cold caches, random gaps).")
    ] = "offline",
    tol: Annotated[list[str], typer.Option(help="Tolerance override DTYPE=VALUE (atol=rtol), repeatable.")] = [],
    threads: Annotated[
        int | None, typer.Option(min=1, help="CPU threads for both reference and kernel (default: all cores).")
    ] = None,
    compile_timeout: Annotated[
        float, typer.Option(min=0.0, help="Seconds allowed to import/compile the candidate.")
    ] = 300.0,
    run_timeout: Annotated[
        float, typer.Option(min=0.0, help="Seconds allowed for the correctness and timing phases.")
    ] = 120.0,
    memory_limit: Annotated[float, typer.Option(min=0.0, help="GiB of resident memory for the sandbox.")] = 8.0,
    no_timing: Annotated[bool, typer.Option("--no-timing", help="Check correctness only.")] = False,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the sandbox's work folder even on success.")] = False,
    size: Size = None,
) -> None:
    """Judge a candidate kernel: correct? how fast? honest?"""
    from agentkern.harness.evaluate import evaluate

    opts = _eval_options(
        tol,
        trials=trials,
        seed=seed,
        second_shape=second_shape,
        mode=mode,
        threads=threads,
        compile_timeout_s=compile_timeout,
        run_timeout_s=run_timeout,
        memory_limit_gb=memory_limit,
        check_timing=not no_timing,
        size=size,
    )
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


# The options of `optimize`, declared once here so that the command reads as a list of them. Where it evaluates
# (agentkern/executors/):
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
    ctx: typer.Context,
    problem: ProblemArg = None,
    target: Target = "auto",
    backend: Backend = None,
    model: Model = None,
    api_base: ApiBase = None,
    max_iters: MaxIters = 8,
    patience: Patience = 3,
    min_gain: MinGain = 0.01,
    k: K = None,
    beam: Beam = 2,
    time_budget_s: TimeBudget = None,
    max_cost: MaxCost = None,
    max_tokens: MaxTokens = None,
    context_window: ContextWindow = None,
    start_from: StartFrom = "auto",
    stop_at_roofline: StopAtRoofline = 0.95,
    confirm_budget_s: ConfirmBudget = 2.0,
    seed: Seed = 0,
    out: OutDir = None,
    resume: Resume = None,
    json_out: JsonEnd = False,
    size: Size = None,
    workers: Workers = None,
    executor: Executor = "local",
    ray_address: RayAddress = None,
) -> None:
    """Run the planner/coder/compiler/profiler/critic loop and keep the fastest correct kernel."""
    import dataclasses

    from agentkern.loop import run as optimize
    from agentkern.loop.deps import OptimizeOptions
    from agentkern.loop.progress import progress_for
    from agentkern.traces.describe import beats_reference

    if problem is None and resume is None:
        raise UserError(
            "say which problem to optimise (an op name such as softmax, or a problem file), or --resume RUN_ID"
        )
    # The parameters are named as OptimizeOptions' fields.
    given = {f.name: ctx.params[f.name] for f in dataclasses.fields(OptimizeOptions) if f.name != "problem"}
    opts = OptimizeOptions(problem=problem or "", **given)
    # A resumed run keeps its own --max-iters, which the live view does not know yet.
    with progress_for(f"agentkern optimize {problem or resume}", json_out, None if resume else max_iters) as progress:
        result = optimize.run(opts, resume=resume, on_event=progress)
    result["beats_reference"] = beats_reference(result["best"])
    if json_out:
        print(json.dumps(result, indent=2, default=str))
    else:
        print_optimize_result(result)


def print_optimize_result(result: dict) -> None:
    best = result["best"]
    out.print(
        f"run {result['run_id']}: {result['iterations']} iterations, {result['candidates']} candidates; "
        f"stopped: {result['stopped_because']}",
        highlight=False,
    )
    if best and best.get("predicted"):
        from agentkern.verdict_view import size_label

        size = best.get("predicted_size")
        out.print(
            f"[bold cyan]best {best['speedup']:.2f}x predicted, not measured[/] ({best['strategy']}): correct in the "
            f"Triton interpreter; the cost model puts it at {best['kernel_ms']:.4g} ms vs {best['reference_ms']:.4g} ms "
            f"on {result['target']} at {size_label(size)}. Re-time it there: agentkern eval {result['problem']} {best['path']} "
            f"--target {result['target']}",
            highlight=False,
        )
    elif best:
        colour = "green" if result["beats_reference"] else "yellow"
        out.print(
            f"[bold {colour}]best {best['speedup']:.2f}x[/] ({best['strategy']}), {best['kernel_ms']:.4g} ms vs "
            f"{best['reference_ms']:.4g} ms: {best['path']}",
            highlight=False,
        )
    elif result.get("confirmation"):
        out.print("[bold yellow]no candidate held up when timed again:[/] see the confirm step", highlight=False)
    else:
        out.print("[bold yellow]no correct candidate found[/]", highlight=False)
    if result.get("confirmation"):
        from agentkern.loop.nodes.confirm import summary

        out.print(f"confirm: {summary(result['confirmation'])}", highlight=False)
    if best and not best.get("predicted"):
        from agentkern.loop.winning_params import one_line

        why = one_line(result.get("params_won"))
        if why:
            out.print(why, highlight=False)
    if best and not result["beats_reference"]:
        how = " (as the cost model predicts it)" if best.get("predicted") else ""
        out.print(
            f"[bold yellow]nothing beat the reference{how}:[/] the fastest correct kernel is {best['speedup']:.2f}x, "
            "not faster than PyTorch; it is written out for reference only",
            highlight=False,
        )
    noise = best_timing_noise(result)
    if noise:
        out.print(f"[bold yellow]{escape(noise)}[/]", highlight=False)  # it may name other programs' processes


def best_timing_noise(result: dict) -> str | None:
    """The run store's timing statistics of the best kernel, flagged when they were noisy (traces/describe.py)."""
    if not result["best"] or result["best"].get("predicted"):
        return None
    from agentkern.loop.run import open_store
    from agentkern.traces import describe
    from agentkern.traces.trace import load

    store = open_store()
    try:
        return describe.noise_note(load(store, result["run_id"]).candidate(result["best"]["candidate"]))
    finally:
        store.close()


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


@app.command("doctor")
def doctor_command(
    json_out: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
) -> None:
    """What this machine gives the harness: candidate isolation (bubblewrap), compilers, the GPU."""
    from agentkern.doctor import checks

    found = checks()
    if json_out:
        print(json.dumps(found, indent=2))
        return
    for check in found:
        mark = "[green]ok[/]" if check["ok"] else "[yellow]missing[/]"
        out.print(f"{mark:>16}  {check['name']}: {check['found']}", highlight=False)


from agentkern.kb.cli import app as kb_app  # noqa: E402  (a sub-app; it imports chromadb only when run)

app.add_typer(kb_app, name="kb")

from agentkern.bench.cli import app as bench_app  # noqa: E402  (imports torch and the harness only when run)

app.add_typer(bench_app, name="bench")

from agentkern.traces.cli import app as traces_app  # noqa: E402  (reads the run store only when run)

app.add_typer(traces_app, name="traces")


def _version(value: bool) -> None:
    if value:
        try:
            version = metadata.version("agentkern")
        except metadata.PackageNotFoundError:  # run from a checkout that was never installed
            from agentkern import __version__ as version
        print(f"agentkern {version}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool | None, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = None,
) -> None:
    pass


def _error(message: str, exit_code: int) -> NoReturn:
    # One line, never wrapped: CI logs and scripts read it.
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    sys.exit(exit_code)


def main() -> None:
    try:
        from agentkern import cpu_isa

        cpu_isa.apply_to_environment()  # before torch loads: its libraries read the level when they do
        # Not standalone: click's errors come back here, to be said in one line like agentkern's own.
        code = app(standalone_mode=False)
    except typer.TyperException as exc:  # click's (typer's) errors: a bad value, a missing argument, ...
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help is printed already (typer tells it so too)
            sys.exit(exc.exit_code)
        ctx = getattr(exc, "ctx", None)
        where = f" (see {ctx.command_path} --help)" if ctx is not None else ""
        _error(" ".join(exc.format_message().split()) + where, exc.exit_code)
    except typer.Abort:  # end of input at a prompt
        _error("aborted", 1)
    except UserError as exc:
        _error(str(exc), exc.exit_code)
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
    sys.exit(code if isinstance(code, int) else 0)  # typer.Exit(n) in a command comes back as n
