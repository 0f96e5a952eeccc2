"""Progress of an optimisation run: a Rich live view on a terminal, plain lines otherwise (CI logs).

Progress goes to stderr, so `--json` output on stdout stays one clean object.
"""

from __future__ import annotations

import sys
import time

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
    """Iteration N of M, the agent at work, elapsed time, a table of candidates, the best so far, tokens, cost."""

    def __init__(self, title: str, max_iters: int | None = None, clock=time.monotonic) -> None:
        self.title = title
        self.max_iters = max_iters  # None: not known (a resumed run keeps its own)
        self.clock = clock
        self.started = clock()
        self.rows: list[dict] = []
        self.agent = "starting"
        self.iteration = 0
        self.tokens = 0
        self.cost = 0.0
        self.predicted = False
        self.streamed = 0  # chunks (about tokens) of the model's reply streamed so far
        # Rendered on every refresh (not only on events), so the elapsed time keeps moving during an evaluation.
        self.live = Live(get_renderable=self.render, console=Console(stderr=True), refresh_per_second=4)

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
        if kind == "model":  # a streamed reply arriving: the agent at work is the one asking
            self.streamed = data.get("chunks", 0)
            return
        self.agent = kind
        self.streamed = 0
        self.iteration = data.get("iteration", self.iteration)
        if kind == "profiler":
            self.rows.append(data["candidate"])
        if kind == "critic":
            self.tokens, self.cost = data.get("tokens", self.tokens), data.get("cost_usd", self.cost)

    def render(self) -> Group:
        rows = list(self.rows)  # events append from the loop while the refresh thread renders
        table = Table(title=None, expand=False)
        table.add_column("candidate", no_wrap=True)
        # Strategies differ in their last parameters: wrap them whole rather than cut them off.
        table.add_column("strategy", overflow="fold")
        for col in ("status", "speedup", "roofline"):
            table.add_column(col, no_wrap=True)
        best = max((r for r in rows if r.get("correct") and r.get("speedup")), key=lambda r: r["speedup"], default=None)
        for r in rows[-15:]:
            table.add_row(
                r["id"],
                r["strategy"],
                r["status"],
                _speed(r),
                "" if r.get("roofline_fraction") is None else f"{r['roofline_fraction']:.0%}",
                style="bold green" if best is r else "magenta" if r["status"] == "suspicious" else "",
            )
        status = f"best {_speed(best)} ({best['id']})" if best else "no correct candidate yet"
        usage = f"  tokens {self.tokens}  ${self.cost:.4f}" if self.tokens else ""
        iteration = f"iteration {self.iteration}" + (f" of {self.max_iters}" if self.max_iters else "")
        elapsed = _elapsed(self.clock() - self.started)
        agent = f"{self.agent}: reply {self.streamed} tokens" if self.streamed else self.agent
        head = Text(f"{self.title}  {iteration}  [{agent}]  {elapsed} elapsed  {status}{usage}")
        parts = [head, table]
        if self.predicted:
            parts.append(Text(f"* {PREDICTED_NOTE}", style="cyan"))
        return Group(*parts)


def _elapsed(seconds: float) -> str:
    """4 s, 2:05, 1:02:05."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


PREDICTED_NOTE = (
    "predicted by the cost model, not measured: the target GPU is not on this machine "
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
    if kind == "confirm":
        return f"  confirm: timing {', '.join(data['contenders'])} again"
    if kind == "confirmed":
        from agentkern.loop.nodes.confirm import summary

        return f"  confirm: {summary(data)}"
    if kind == "critic":
        stop = f"; stopping: {data['stopped']}" if data.get("stopped") else ""
        usage = f", {data['tokens']} tokens, ${data['cost_usd']:.4f}" if data.get("tokens") else ""
        return f"  critic: speedup@k {data['speedup_at_k']:.2f}x, stage {data['stage']}{usage}{stop}"
    return None


def progress_for(title: str, json_out: bool, max_iters: int | None = None):
    if not json_out and sys.stderr.isatty():
        return LiveProgress(title, max_iters)
    return PlainProgress()
