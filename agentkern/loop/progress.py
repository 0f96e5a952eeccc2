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
        self.predicted = False
        self.live = Live(self._render(), console=Console(stderr=True), refresh_per_second=4, transient=False)

    def __enter__(self):
        self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.live.__exit__(*exc)

    def __call__(self, kind: str, data: dict) -> None:
        if kind == "start":
            self.live.console.print(_describe(kind, data), highlight=False, soft_wrap=True)
            self.predicted = data.get("predicted", False)
            return
        self.agent = kind
        self.iteration = data.get("iteration", self.iteration)
        if kind == "profiler":
            self.rows.append(data["candidate"])
        if kind == "critic":
            self.tokens, self.cost = data.get("tokens", self.tokens), data.get("cost_usd", self.cost)
        self.live.update(self._render())

    def _render(self):
        table = Table(title=None, expand=False)
        for col in ("candidate", "strategy", "status", "speedup", "roofline"):
            table.add_column(col)
        best = max(
            (r for r in self.rows if r.get("correct") and r.get("speedup")), key=lambda r: r["speedup"], default=None
        )
        for r in self.rows[-15:]:
            style = "bold green" if best is r else ""
            table.add_row(
                r["id"],
                r["strategy"][:60],
                r["status"],
                _speed(r),
                "" if r.get("roofline_fraction") is None else f"{r['roofline_fraction']:.0%}",
                style=style,
            )
        status = f"best {_speed(best)} ({best['id']})" if best else "no correct candidate yet"
        usage = f"  tokens {self.tokens}  ${self.cost:.4f}" if self.tokens else ""
        head = Text(f"{self.title}  iteration {self.iteration}  [{self.agent}]  {status}{usage}")
        parts = [head, table]
        if self.predicted:
            parts.append(Text(f"* {PREDICTED_NOTE}", style="cyan"))
        return Group(*parts)


PREDICTED_NOTE = (
    "predicted by the roofline cost model, not measured: the target GPU is not on this machine "
    "(correctness checked in the Triton interpreter)"
)


def _speed(c: dict) -> str:
    if c.get("speedup") is None:
        return ""
    return f"{c['speedup']:.2f}x" + ("*" if c.get("predicted") else "")


def _describe(kind: str, data: dict) -> str | None:
    if kind == "start":
        how = "resumed" if data.get("resumed") else "started"
        line = f"run {data['run_id']} {how} (if interrupted: agentkern optimize --resume {data['run_id']})"
        line += f"\nsize: {data['size_note']}" if data.get("size_note") else ""
        return line + (f"\n* speedups marked * are {PREDICTED_NOTE}" if data.get("predicted") else "")
    if kind == "planner":
        return f"iteration {data['iteration']}: planner: {data['plan'].get('summary', '')}"
    if kind == "compiler":
        return f"  compiler: evaluating {data['candidate']}"
    if kind == "profiler":
        c = data["candidate"]
        speed = f" {_speed(c)}" if c.get("speedup") is not None else ""
        roof = f" ({c['roofline_fraction']:.0%} of roofline)" if c.get("roofline_fraction") else ""
        err = f": {c['error']}" if c.get("error") and c["status"] != "ok" else ""
        return f"  {c['id']} {c['strategy']}: {c['status']}{speed}{roof}{err}"
    if kind == "critic":
        stop = f"; stopping: {data['stopped']}" if data.get("stopped") else ""
        usage = f", {data['tokens']} tokens, ${data['cost_usd']:.4f}" if data.get("tokens") else ""
        return f"  critic: speedup@k {data['speedup_at_k']:.2f}x, stage {data['stage']}{usage}{stop}"
    return None


def progress_for(title: str, json_out: bool):
    if not json_out and sys.stderr.isatty():
        return LiveProgress(title)
    return PlainProgress()
