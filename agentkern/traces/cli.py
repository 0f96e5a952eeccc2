"""`agentkern traces`: read the run store (list, show, diff), write an HTML report, export a run's results.

Bad input (an unknown run, a store that is missing or not SQLite, a bad --step) raises UserError:
agentkern.cli.main prints one line and exits 2.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentkern.errors import UserError

app = typer.Typer(
    name="traces",
    help="Read what runs did (every step, model call and candidate), report and export it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DbOpt = Annotated[Path | None, typer.Option("--db", help="The run store (default: AGENTKERN_HOME/runs.db).")]
RunArg = Annotated[str, typer.Argument(help="A run id (`agentkern traces list` shows them).")]
EXPORT_FORMATS = ("module", "kernelbench", "jsonl")
PIPED_WIDTH = 160  # columns when stdout is a file or a pipe (rich would use 80 and wrap the code)


def _db(db: Path | None) -> Path:
    if db is not None:
        return db.expanduser()
    from agentkern.config import home

    return home() / "runs.db"


@contextlib.contextmanager
def _reading(db: Path | None) -> Iterator:
    """The store, open for reading; SQLite errors while reading (a damaged file) become one line, exit 2."""
    from agentkern.traces.store import unreadable
    from agentkern.traces.trace import open_store

    path = _db(db)
    store = open_store(path)
    try:
        yield store
    except sqlite3.DatabaseError as exc:
        raise unreadable(path, exc) from None
    finally:
        store.close()


def _load(db: Path | None, *run_ids: str) -> list:
    from agentkern.traces.trace import load

    with _reading(db) as store:
        return [load(store, run_id) for run_id in run_ids]


def _console() -> Console:
    return Console() if sys.stdout.isatty() else Console(width=PIPED_WIDTH)


def _print(renderables: list, pager: bool) -> None:
    """On a terminal through a pager (less, keeping colours: LESS=FRX as git sets it), plain when piped."""
    console = _console()
    if pager and sys.stdout.isatty():
        os.environ.setdefault("LESS", "FRX")
        with console.pager(styles=True):
            for item in renderables:
                console.print(item)
    else:
        for item in renderables:
            console.print(item)


@app.command("list")
def list_command(
    db: DbOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print a JSON array (stable keys).")] = False,
) -> None:
    """The runs in the store, oldest first: problem, target, status, candidates, best speedup."""
    from agentkern.traces.views import run_summaries, runs_table

    path = _db(db)
    if not path.exists():  # no run yet: an empty list, not an error
        rows = []
    else:
        with _reading(db) as store:
            rows = run_summaries(store)
    if json_out:
        print(json.dumps(rows, indent=2))
    else:
        _console().print(runs_table(rows))


@app.command("show")
def show_command(
    run_id: RunArg,
    db: DbOpt = None,
    step: Annotated[
        int | None, typer.Option("--step", help="Show only step N (numbered in the tree), in full.")
    ] = None,
    full: Annotated[bool, typer.Option("--full", help="Do not shorten long prompts, replies and diffs.")] = False,
    no_pager: Annotated[bool, typer.Option("--no-pager", help="Print straight to the terminal.")] = False,
) -> None:
    """One run as a tree of iterations: each step's prompt, reply, code diff, compiler output, correctness, timing."""
    from agentkern.traces.views import run_tree, step_view

    (trace,) = _load(db, run_id)
    _print([step_view(trace, step) if step is not None else run_tree(trace, full)], pager=not no_pager)


@app.command("diff")
def diff_command(
    run_a: RunArg,
    run_b: RunArg,
    db: DbOpt = None,
    no_pager: Annotated[bool, typer.Option("--no-pager", help="Print straight to the terminal.")] = False,
) -> None:
    """Two runs side by side: settings, results, and the diff of their best kernels."""
    from agentkern.traces.compare import compare

    a, b = _load(db, run_a, run_b)
    _print(compare(a, b), pager=not no_pager)


@app.command("report")
def report_command(
    run_id: RunArg, out_file: Annotated[Path, typer.Option("--out", help="The HTML file to write.")], db: DbOpt = None
) -> None:
    """One self-contained HTML file (no network): the search in charts, verdicts, tokens and cost, best kernel."""
    from agentkern.traces.html_report import write_report

    (trace,) = _load(db, run_id)
    path = write_report(trace, out_file)
    print(f"wrote {path}")


@app.command("export")
def export_command(
    run_id: RunArg,
    fmt: Annotated[str, typer.Option("--format", help="module, kernelbench or jsonl.")],
    out_dir: Annotated[Path, typer.Option("--out", help="The folder to write into (created).")],
    db: DbOpt = None,
) -> None:
    """The best kernel as a tested module, the run in KernelBench's layout, or JSON lines with rewards.

    module: the kernel, a plain function, a torch.library custom op, a pytest file.
    kernelbench: the problem and kernels in KernelBench's layout, with eval_results.json.
    jsonl: a record per model call: prompt, completion, reward (speedup; -1 for a failure)."""
    if fmt not in EXPORT_FORMATS:
        raise UserError(f"--format must be one of {', '.join(EXPORT_FORMATS)}, not {fmt!r}")
    from agentkern.traces import export

    (trace,) = _load(db, run_id)
    written = export.EXPORTERS[fmt](trace, out_dir)
    for path in written:
        print(path)
