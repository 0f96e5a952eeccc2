"""Benchmark: the same `agentkern bench` run with --workers 1 and --workers 2, side by side.

    python benchmarks/executor_workers.py [--max-iters 2] [--repeat 1] [--compile-baseline] [problems ...]

Each run is a fresh `agentkern bench kernels_dataset --only P ... --target cpu --json` process with its own
empty AGENTKERN_HOME and torch.compile cache, so neither run reuses the other's C++ builds; with --repeat 2
the order alternates (1, 2, 2, 1) so neither setting always runs on a cooler machine. It prints each run's
wall time and CPU time, the ratio (workers 2 / workers 1) beside the least ratio the machine's cores allow
for that much CPU work, and whether the results match: per problem the status, the
number of candidates and which of them were correct (the speedups are printed beside each other; they are
measurements and move by 10-20% between runs on a shared machine). It prints figures; it asserts nothing.

torch.compile's baseline is left out unless --compile-baseline: it is timed the same way in both settings,
but its minutes of inductor compilation say nothing about evaluating candidates.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["sum_rows", "layernorm", "rmsnorm", "mean_rows", "max_rows"]


def run_bench(problems: list[str], workers: int, max_iters: int, compile_baseline: bool) -> tuple[float, float, dict]:
    scratch = Path(tempfile.mkdtemp(prefix=f"agentkern-workers{workers}-"))
    env = {**os.environ, "AGENTKERN_HOME": str(scratch / "home"), "TORCHINDUCTOR_CACHE_DIR": str(scratch / "inductor")}
    cmd = [
        sys.executable,
        "-m",
        "agentkern",
        "bench",
        "run",
        "kernels_dataset",
        "--target",
        "cpu",
        "--max-iters",
        str(max_iters),
        "--workers",
        str(workers),
        "--json",
        "--compile-baseline" if compile_baseline else "--no-compile-baseline",
        *(arg for p in problems for arg in ("--only", p)),
    ]
    before = _children_cpu_s()
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"bench --workers {workers} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall, _children_cpu_s() - before, json.loads(proc.stdout)


def _children_cpu_s() -> float:
    """User + system CPU time of every finished descendant (bench, its workers, g++), reaped so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def outcome(row: dict) -> tuple:
    """What must match between the two settings."""
    return (row["status"], row["candidates"], tuple(s is not None for s in row["candidate_speedups"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", default=DEFAULT)
    parser.add_argument("--max-iters", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="pairs of runs; the order alternates")
    parser.add_argument("--compile-baseline", action="store_true")
    args = parser.parse_args()

    walls: dict[int, list[float]] = {1: [], 2: []}
    cpus: dict[int, list[float]] = {1: [], 2: []}
    reports: dict[int, list[dict]] = {1: [], 2: []}
    for pair in range(args.repeat):
        for workers in (1, 2) if pair % 2 == 0 else (2, 1):
            wall, cpu, report = run_bench(args.problems, workers, args.max_iters, args.compile_baseline)
            walls[workers].append(wall)
            cpus[workers].append(cpu)
            reports[workers].append(report)
            print(f"run {pair + 1}: --workers {workers}: {wall:.1f} s, {cpu:.1f} CPU-s", file=sys.stderr, flush=True)

    print(
        f"agentkern bench kernels_dataset --only {' --only '.join(args.problems)} --target cpu "
        f"--max-iters {args.max_iters}{'' if args.compile_baseline else ' --no-compile-baseline'}, "
        f"{os.cpu_count()} cores, {args.repeat} run(s) each"
    )
    print()
    print(
        "| problem | workers 1: status, candidates (correct) | speedup | workers 2: status, candidates (correct) | speedup | same |"
    )
    print("|---|---|---|---|---|---|")
    all_same = True
    for run in range(args.repeat):
        one = {r["name"]: r for r in reports[1][run]["problems"]}
        two = {r["name"]: r for r in reports[2][run]["problems"]}
        for name in one:
            a, b = one[name], two[name]
            same = outcome(a) == outcome(b)
            all_same &= same

            def cell(r):
                return f"{r['status']}, {r['candidates']} ({r['correct_candidates']})"

            def speed(r):
                return "" if r["speedup_eager"] is None else f"{r['speedup_eager']:.2f}x"

            print(f"| {name} | {cell(a)} | {speed(a)} | {cell(b)} | {speed(b)} | {'yes' if same else 'NO'} |")
    print()
    w1, w2 = statistics.median(walls[1]), statistics.median(walls[2])
    cores = os.cpu_count() or 1
    print("| | wall time (median) | all runs | CPU time (median) | cores busy on average |")
    print("|---|---|---|---|---|")
    for workers, wall in ((1, w1), (2, w2)):
        cpu = statistics.median(cpus[workers])
        print(
            f"| --workers {workers} | {wall:.1f} s | {', '.join(f'{w:.1f}' for w in walls[workers])} | "
            f"{cpu:.1f} s | {cpu / wall:.2f} |"
        )
    # The work itself (CPU seconds) does not shrink with more workers: on `cores` cores no schedule can
    # finish the --workers 1 run's work in less than cpu / cores seconds.
    floor = statistics.median(cpus[1]) / cores / w1
    print(
        f"\nratio workers 2 / workers 1: {w2 / w1:.2f} (the --workers 1 run's CPU time spread over all {cores} "
        f"cores would give {floor:.2f}); same results (status, candidates, which were correct): "
        f"{'yes' if all_same else 'no'}"
    )


if __name__ == "__main__":
    main()
