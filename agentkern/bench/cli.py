"""`agentkern bench`: run a suite, compare two reports, sweep GEMM shapes.

    agentkern bench SUITE --target T ...          (= agentkern bench run SUITE ...)
    agentkern bench gemm-sweep --target T ...
    agentkern bench compare PREVIOUS.json CURRENT.json

Click cannot give one group both a positional SUITE and subcommands (SUITE would swallow the name
`gemm-sweep`), so the suite runner is the subcommand `run`, and the group routes any first word that is
not a subcommand to it: `agentkern bench kernels_dataset` works as the issue spells it. (A suite folder
literally named `gemm-sweep` or `compare` needs `bench run`.) Progress goes to stderr, one line per
problem; stdout has the Markdown table, or with --json one object. Bad input raises UserError (exit 2).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from agentkern.cli_optimize_options import ConfirmBudget
from agentkern.errors import UserError


class _SuiteFirst(TyperGroup):
    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    name="bench",
    cls=_SuiteFirst,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Suites and metrics: optimise every problem of a suite, report fast_p, pass@k, speedup@k, geomean; "
    "compare with an earlier report; sweep GEMM shapes. `agentkern bench SUITE ...` is short for "
    "`agentkern bench run SUITE ...`.",
)

Target = Annotated[str, typer.Option("--target", "-t", help="cpu, a100, h100, h200, l4, l40s, rtx4090, or auto.")]
JsonOut = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]
OutFile = Annotated[
    str | None, typer.Option("--out", help="Also write the report to FILE (JSON; Markdown if FILE ends in .md).")
]


def _emit(report: dict, markdown: str, json_out: bool, out_file: str | None) -> None:
    if out_file:
        path = Path(out_file).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(markdown if path.suffix == ".md" else json.dumps(report, indent=2, default=str) + "\n")
    if json_out:
        print(json.dumps(report, indent=2, default=str))
    else:
        print(markdown, end="")


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# The options of `bench run`, declared once here so that the command reads as a list of them.
SuiteArg = Annotated[
    str,
    typer.Argument(
        help="kernels_dataset, a name under kernels_dataset/, a folder of problem files, or a KernelBench checkout."
    ),
]
Model = Annotated[str | None, typer.Option(help="A litellm model string; default: the built-in policy.")]
ApiBase = Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")]
MaxIters = Annotated[int, typer.Option(min=1, help="Iterations per problem.")]
Beam = Annotated[int, typer.Option(min=1, help="Candidates per iteration.")]
K = Annotated[int, typer.Option(min=1, help="k of pass@k and speedup@k (the first k candidates of each problem).")]
Baseline = Annotated[str, typer.Option(help="Speedups in the metrics are over eager PyTorch or torch.compile.")]
Size = Annotated[
    str | None,
    typer.Option(
        help="Problem sizes: cpu or gpu (default: the target picks), or small (size constants halved to fit this machine: foreign suites such as KernelBench)."
    ),
]
Seed = Annotated[int, typer.Option(help="Seed of the built-in policy's search.")]
TimeBudget = Annotated[
    float | None, typer.Option("--time-budget", min=0.0, help="Seconds per problem (checked between iterations).")
]
Limit = Annotated[int | None, typer.Option(min=1, help="Run only the first N problems.")]
Only = Annotated[
    list[str], typer.Option(help="Run only this problem (its name, e.g. softmax or level1/19_ReLU); repeatable.")
]
KernelsDir = Annotated[str | None, typer.Option(help="Copy each problem's best kernel to DIR/<problem>/.")]
CompileBaseline = Annotated[
    bool, typer.Option("--compile-baseline/--no-compile-baseline", help="Time torch.compile for each solved problem.")
]
Compare = Annotated[
    str | None, typer.Option(help="An earlier --json report: list what broke or got slower; exit 1 if any.")
]
Threshold = Annotated[
    float, typer.Option(min=0.0, help="Relative speedup drop that counts as slower (with --compare).")
]
Workers = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Evaluations at once, and problems in flight "
        "(default: 1 locally; the cluster's size with --executor ray).",
    ),
]
Executor = Annotated[str, typer.Option(help="Where candidates are evaluated: local (sandbox workers here) or ray.")]
RayAddress = Annotated[
    str | None,
    typer.Option(help="An existing Ray cluster (HOST:6379 or ray://HOST:10001); default: a local Ray instance."),
]


@app.command("run")
def run_command(
    ctx: typer.Context,
    suite: SuiteArg,
    target: Target = "auto",
    model: Model = None,
    api_base: ApiBase = None,
    max_iters: MaxIters = 4,
    beam: Beam = 2,
    k: K = 1,
    baseline: Baseline = "eager",
    size: Size = None,
    seed: Seed = 0,
    time_budget_s: TimeBudget = None,
    confirm_budget_s: ConfirmBudget = 2.0,
    limit: Limit = None,
    only: Only = [],
    kernels_dir: KernelsDir = None,
    compile_baseline: CompileBaseline = True,
    compare: Compare = None,
    threshold: Threshold = 0.10,
    workers: Workers = None,
    executor: Executor = "local",
    ray_address: RayAddress = None,
    json_out: JsonOut = False,
    out_file: OutFile = None,
) -> None:
    """Optimise every problem of SUITE; per-problem rows and suite metrics (fast_p, pass@k, speedup@k, geomean)."""
    import dataclasses

    from agentkern.bench import compare as C
    from agentkern.bench.runner import BenchOptions
    from agentkern.bench.suites import resolve_suite
    from agentkern.bench.summary import markdown
    from agentkern.targets import get_target

    if baseline not in ("eager", "compile"):
        raise UserError(f"--baseline must be eager or compile, not {baseline!r}")
    from agentkern.sizes import SIZE_NAMES, SMALL

    if size is not None and size not in (*SIZE_NAMES, SMALL):
        raise UserError(f"--size must be one of {', '.join((*SIZE_NAMES, SMALL))}, not {size!r}")
    previous = C.load_report(compare) if compare else None  # a bad file fails now, not after an hour
    found = resolve_suite(suite, limit, only)  # before the target: a bad suite fails before the host is measured
    tgt = get_target(target)
    # The parameters are named as BenchOptions' fields.
    given = {f.name: ctx.params[f.name] for f in dataclasses.fields(BenchOptions) if f.name != "target"}
    report = _run_suite(found, tgt, BenchOptions(target=tgt.name, **given))
    result = None
    if previous is not None:
        result = C.compare(previous, report, threshold)
        report["comparison"] = result
    _emit(report, markdown(report), json_out, out_file)
    if result is not None:
        for line in C.summary_lines(result):
            _say(line)
        if result["regressed"]:
            raise typer.Exit(1)


def _run_suite(found, tgt, opts) -> dict:
    """Say what runs where (stderr), run every problem of the suite, and build the report."""
    from agentkern.bench.runner import run_suite
    from agentkern.bench.summary import build_report, progress_line
    from agentkern.executors import make_executor
    from agentkern.targets import measured_on

    _say(
        f"agentkern bench {found.name}: {len(found.problems)} problems from {found.root} on {tgt.name}, "
        f"model {opts.model or 'builtin'}, --max-iters {opts.max_iters}"
    )
    if opts.size is None:
        from agentkern.sizes import default_size
        from agentkern.targets import is_present

        _, note = default_size(tgt, is_present(tgt))
        if note:
            _say(f"size: {note}")
    # Bad input (an unknown executor, no Ray) fails here, before any problem runs.
    with make_executor(opts.executor, opts.workers, opts.ray_address, tgt.kind, tgt.name) as runner:
        _say(f"candidates evaluated by the {runner.describe()}")
        rows = run_suite(
            found,
            opts,
            on_row=lambda i, n, row: _say(progress_line(i, n, row)),
            executor=runner,
            on_baseline=lambda i, n, name: _say(f"[torch.compile baseline {i}/{n}] {name}"),
        )
    return build_report(found.name, tgt.name, opts, rows, measured_on(tgt))


@app.command("compare")
def compare_command(
    previous: Annotated[str, typer.Argument(help="The earlier report (bench --json).")],
    current: Annotated[str, typer.Argument(help="The new report.")],
    threshold: Annotated[float, typer.Option(min=0.0, help="Relative speedup drop that counts as slower.")] = 0.10,
    json_out: JsonOut = False,
) -> None:
    """What broke or got slower between two bench reports; exit 1 if anything did."""
    from agentkern.bench import compare as C

    result = C.compare(C.load_report(previous), C.load_report(current), threshold)
    if json_out:
        print(json.dumps(result, indent=2))
    else:
        print("\n".join(C.summary_lines(result)))
    if result["regressed"]:
        raise typer.Exit(1)


@app.command("gemm-sweep")
def gemm_sweep_command(
    target: Target = "auto",
    dtype: Annotated[str, typer.Option(help="fp16, bf16 or fp32 (a CPU sweeps fp32).")] = "fp16",
    shapes: Annotated[
        int,
        typer.Option(
            min=1, help="How many (M, N, K) shapes, from a fixed shuffled grid (GPU: CUDA-L2's 1000; CPU: 125)."
        ),
    ] = 20,
    json_out: JsonOut = False,
    out_file: OutFile = None,
) -> None:
    """Time the built-in GEMM template against torch.matmul over many shapes, offline and server mode."""
    from agentkern.bench.gemm_sweep import markdown, run_sweep, shape_line

    result = run_sweep(target, dtype, shapes, on_shape=lambda i, n, row: _say(shape_line(i, n, row)))
    for note in result["notes"]:
        _say(f"note: {note}")
    _emit(result, markdown(result), json_out, out_file)
