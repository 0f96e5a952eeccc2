"""Benchmark: a kernel's speedup measured without the harness, the way the harness's runners measure it.

    MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1099511627776 \
    python benchmarks/timing_truth.py PROBLEM.py KERNEL.py [--blocks 12] [--calls 16] [--threads N]

(glibc reads those two at start: the harness's own malloc settings, harness/jobs.py.)

Both models in this one process (so: trusted kernels only), timed in alternating blocks of back-to-back
calls, each side on its own fresh `get_inputs()` draws made for that block, as harness/timing.py does
across its two runner processes. No freezing, no pipes, no dispatch mode: what is left is the convention
(fresh inputs for each call, written before the block; with --keep-outputs each call's output in memory of
its own until the block ends, as a runner keeps them for the judge to read), so the harness's figure can be compared with it
(docs/harness.md, "Measured before and after harness v2"). It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from _common import load_module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", type=Path)
    parser.add_argument("kernel", type=Path)
    parser.add_argument("--blocks", type=int, default=12)
    parser.add_argument("--calls", type=int, default=16)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--keep-outputs", action="store_true", help="keep each call's output until the block ends (as a runner does)"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    problem, kernel = load_module(args.problem, "timing_truth_problem"), load_module(args.kernel, "timing_truth_kernel")
    init = problem.get_init_inputs()
    torch.manual_seed(0)
    reference = problem.Model(*init).eval()
    torch.manual_seed(0)
    candidate = kernel.ModelNew(*init).eval()
    times: dict[str, list[float]] = {"reference": [], "kernel": []}
    sides = [("reference", reference), ("kernel", candidate)]
    with torch.no_grad():
        for block in range(args.blocks):
            for name, model in sides if block % 2 else sides[::-1]:  # alternate who goes first
                calls = [problem.get_inputs() for _ in range(args.calls)]
                kept = []
                t0 = time.perf_counter()
                for call in calls:
                    out = model(*call)
                    if args.keep_outputs:
                        kept.append(out)
                times[name].append((time.perf_counter() - t0) / args.calls)
    ref, ker = (statistics.median(times[k][2:]) for k in ("reference", "kernel"))  # the first blocks warm up
    print(
        f"{args.problem.stem}: reference {ref * 1e3:.3f} ms, kernel {ker * 1e3:.3f} ms, speedup {ref / ker:.2f}x "
        f"(median of {args.blocks - 2} blocks of {args.calls} calls, {torch.get_num_threads()} threads)"
    )


if __name__ == "__main__":
    main()
