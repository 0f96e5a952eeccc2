"""Benchmark: the harness's own overhead per evaluation on the CPU, excluding compilation.

    python benchmarks/harness_overhead.py [--repeats N] [--problem softmax] [--solution PATH]

For a 1024x1024 op it evaluates a shipped C++ kernel several times: cold (a new interpreter per
evaluation, as `agentkern eval` does), warm (back to back with a WarmPool, whose spare worker rarely
finishes its imports in time on 2 cores) and warm-ready (the spare had time to finish its imports, as
when a search loop spends time on its model between evaluations). Each evaluation's wall time is split:
  compile      loading the candidate (a cached build: hashing the source and dlopen)
  kernel time  time inside the timed reference and kernel calls (measurement, not overhead)
  overhead     everything else: process start, imports, correctness trials, inputs, checks
It also times the reuse of a cached C++ build on its own. It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed_call_seconds(result) -> float:
    timing = result.details.get("timing") or {}
    total = 0.0
    for side in ("reference", "kernel"):
        s = timing.get(side)
        if s:  # calls plus the warm-up call, at their mean
            total += s["mean_ms"] * (s["calls"] + 1) / 1e3
    return total


def run(label: str, repeats: int, problem: str, solution: Path, pool, wait_ready: bool = False) -> list[dict]:
    from agentkern.harness.evaluate import evaluate

    rows = []
    evaluate(problem, solution, "cpu", pool=pool)  # builds the kernel once, fills caches and the pool
    for _ in range(repeats):
        if wait_ready:
            pool.wait_ready()  # a search loop spends this time on its model and compiler
        t0 = time.perf_counter()
        result = evaluate(problem, solution, "cpu", pool=pool)
        wall = time.perf_counter() - t0
        assert result.status == "ok", result.error
        compile_s = result.details["phases"]["compile_s"]
        kernel_s = timed_call_seconds(result)
        rows.append(
            {
                "wall": wall,
                "compile": compile_s,
                "kernel": kernel_s,
                "overhead": wall - compile_s - kernel_s,
                "speedup": result.speedup,
            }
        )
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(
        f"{label:<11} wall {med['wall']:.3f} s  compile {med['compile']:.3f} s  kernel time {med['kernel']:.3f} s  "
        f"overhead {med['overhead']:.3f} s  (median of {repeats}; speedup {med['speedup']:.2f}x)"
    )
    return rows


def cached_build_seconds(solution: Path, repeats: int) -> float:
    """Time to reuse a cached C++ build, as a candidate's import does: hash + dlopen."""
    from agentkern import native

    source = solution.read_text().split('r"""', 1)[1].split('"""', 1)[0]
    native.compile_cpp(source, name="bench")
    times = []
    for _ in range(repeats):
        native._compiler_id.cache_clear()  # a new process pays for `g++ --version` too
        t0 = time.perf_counter()
        native.compile_cpp(source, name="bench")
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--problem", default="softmax")
    parser.add_argument("--solution", type=Path, default=ROOT / "kernels_dataset/solutions/softmax_cpp.py")
    args = parser.parse_args()
    os.environ.setdefault("AGENTKERN_HOME", tempfile.mkdtemp(prefix="agentkern-bench-"))

    from agentkern.config import home
    from agentkern.harness.sandbox import WarmPool

    print(
        f"harness overhead per evaluation: {args.problem} (1024x1024 fp32), {args.solution.name}, "
        f"{os.cpu_count()} cores, python {sys.version.split()[0]}"
    )
    run("cold", args.repeats, args.problem, args.solution, None)
    pool = WarmPool(home() / "spares")
    try:
        run("warm", args.repeats, args.problem, args.solution, pool)
        run("warm-ready", args.repeats, args.problem, args.solution, pool, wait_ready=True)
    finally:
        pool.close()
    print(f"cached C++ build reuse: {cached_build_seconds(args.solution, 20) * 1e3:.1f} ms (median of 20)")


if __name__ == "__main__":
    main()
