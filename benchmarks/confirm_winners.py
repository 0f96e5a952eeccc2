"""Benchmark: each winner of a bench report timed again, independently, with a longer timing budget.

    python benchmarks/confirm_winners.py REPORT.json [--time-budget 2.0] [--only NAME ...] [--json OUT.json]

A search keeps the fastest of its candidates, each timed once by the harness; the fastest of several noisy
measurements is biased upwards (the winner's curse: of eight candidates of one true speed, the luckiest one's
figure is the one reported). This script asks the harness for a second verdict on every winning kernel of a
`agentkern bench --json` report: fresh seeds, fresh runner processes, `--time-budget` seconds of timing (the
search uses EvalOptions' 0.5), the same target and size. It prints both speedups side by side and fast_1 and
the geomean over eager computed from each: the confirmed figures are the ones to quote. It asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


def confirm(problem: dict, report: dict, budget_s: float) -> dict:
    from agentkern.harness.evaluate import evaluate
    from agentkern.types import EvalOptions

    opts = EvalOptions(time_budget_s=budget_s, size=problem.get("size") or report["options"].get("size"))
    result = evaluate(problem["path"], problem["kernel_path"], report["target"], opts)
    return {
        "name": problem["name"],
        "search": problem["speedup_eager"],
        "confirmed": result.speedup if result.status == "ok" else None,
        "status": result.status,
        "kernel_ms": result.kernel_ms,
        "reference_ms": result.reference_ms,
    }


def metrics(speedups: list[float | None]) -> dict:
    done = [s for s in speedups if s]
    return {
        "fast_1": sum(s > 1.0 for s in done) / max(len(speedups), 1),
        "geomean": math.exp(sum(math.log(s) for s in done) / len(done)) if done else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--time-budget", type=float, default=2.0)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report = json.loads(args.report.read_text())
    problems = [p for p in report["problems"] if p.get("kernel_path") and (not args.only or p["name"] in args.only)]
    rows = []
    print("| problem | search (vs eager) | confirmed | kernel ms | eager ms |")
    print("|---|---|---|---|---|")
    for problem in problems:
        row = confirm(problem, report, args.time_budget)
        rows.append(row)
        confirmed = f"{row['confirmed']:.2f}x" if row["confirmed"] else row["status"]
        kernel = f"{row['kernel_ms']:.4g}" if row["kernel_ms"] else "-"
        ref = f"{row['reference_ms']:.4g}" if row["reference_ms"] else "-"
        print(f"| {row['name']} | {row['search']:.2f}x | {confirmed} | {kernel} | {ref} |", flush=True)
    search, confirmed = metrics([r["search"] for r in rows]), metrics([r["confirmed"] for r in rows])
    print(
        f"\nsearch:    fast_1 {search['fast_1']:.3f}, geomean {search['geomean']:.3f}x over eager ({len(rows)} problems)"
    )
    print(f"confirmed: fast_1 {confirmed['fast_1']:.3f}, geomean {confirmed['geomean']:.3f}x over eager")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "search": search, "confirmed": confirmed}, indent=2))


if __name__ == "__main__":
    main()
