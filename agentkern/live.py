"""Progress of an optimisation run: a Rich live view on a terminal, plain lines otherwise (CI logs).

Progress goes to stderr, so `--json` output on stdout stays one clean object.
"""

from __future__ import annotations

import sys

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text


class PlainProgress:
    def __init__(self, stream=sys.stderr) -> None:
        self.stream = stream

    def __call__(self, kind: str, data: dict) -> None:
        line = _describe(kind, data)
        if line:
            print(line, file=self.stream, flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


class LiveProgress:
    """Iteration, the agent at work, a table of candidates, the best so far, tokens and cost."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.rows: list[dict] = []
        self.agent = "starting"
        self.iteration = 0
        self.tokens = 0
        self.cost = 0.0
        self.live = Live(self._render(), console=Console(stderr=True), refresh_per_second=4, transient=False)

    def __enter__(self):
        self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.live.__exit__(*exc)

    def __call__(self, kind: str, data: dict) -> None:
        self.agent = kind
        self.iteration = data.get("iteration", self.iteration)
        if kind == "profiler":
            self.rows.append(data["candidate"])
        self.live.update(self._render())

    def _render(self):
        table = Table(title=None, expand=False)
        for col in ("candidate", "strategy", "status", "speedup", "roofline"):
            table.add_column(col)
        best = max((r for r in self.rows if r.get("correct") and r.get("speedup")), key=lambda r: r["speedup"], default=None)
        for r in self.rows[-15:]:
            style = "bold green" if best is r else ""
            table.add_row(r["id"], r["strategy"][:60], r["status"],
                          "" if r.get("speedup") is None else f"{r['speedup']:.2f}x",
                          "" if r.get("roofline_fraction") is None else f"{r['roofline_fraction']:.0%}", style=style)
        head = Text(f"{self.title}  iteration {self.iteration}  [{self.agent}]  "
                    f"best {best['speedup']:.2f}x ({best['id']})" if best else f"{self.title}  iteration {self.iteration}  [{self.agent}]  no correct candidate yet")
        return Group(head, table)


def _describe(kind: str, data: dict) -> str | None:
    if kind == "planner":
        return f"iteration {data['iteration']}: planner: {data['plan'].get('summary', '')}"
    if kind == "compiler":
        return f"  compiler: evaluating {data['candidate']}"
    if kind == "profiler":
        c = data["candidate"]
        speed = f" {c['speedup']:.2f}x" if c.get("speedup") is not None else ""
        roof = f" ({c['roofline_fraction']:.0%} of roofline)" if c.get("roofline_fraction") else ""
        err = f": {c['error']}" if c.get("error") and c["status"] != "ok" else ""
        return f"  {c['id']} {c['strategy']}: {c['status']}{speed}{roof}{err}"
    if kind == "critic":
        stop = f"; stopping: {data['stopped']}" if data.get("stopped") else ""
        return f"  critic: speedup@k {data['speedup_at_k']:.2f}x, stage {data['stage']}{stop}"
    return None


def progress_for(title: str, json_out: bool):
    if not json_out and sys.stderr.isatty():
        return LiveProgress(title)
    return PlainProgress()
