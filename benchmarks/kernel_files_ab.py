"""Benchmark: kernel files of one problem side by side with its torch eager Model, in one process, with inputs
as fresh as the judge's.

    python benchmarks/kernel_files_ab.py PROBLEM.py NAME=KERNEL.py [NAME=KERNEL.py ...] [--size small]
                                         [--seconds 10] [--pool-mb 200] [--hot] [--threads N] [--busy]

The judge (agentkern/harness/timing.py) gives every call fresh inputs, written just before its block, and keeps
every output: a kernel whose reads outrun the hardware prefetchers pays for it there and not in a loop over one
input (KernelBench L2 1's convolution: 0.071 ms a call on inputs in the caches, 0.139 ms on fresh ones, Zen 5,
2026-11-29). Here the sides take turns in rounds of ~0.15 s each; a round calls a side on every input set of a
pool of --pool-mb (200 MB: past the last-level cache; `--hot`: 20 sets), keeping the outputs. It prints each side's
median ms a call and its median ratio to the first kernel over the rounds; it asserts nothing. What the judge
adds and this does not: each side in its own process, and the op allowlist's dispatch mode around the
candidate (each aten op a kernel dispatches costs ~2 us more there: docs/harness.md). `--threads N`: torch's
(and so the kernels' OpenMP) thread count, the harness's otherwise. `--busy`: a process spinning on the CPU for
the whole run, as another program beside a timing (a build, a test suite, a neighbour on a shared runner): what
a kernel whose threads wait for each other loses when one of them loses its core.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from pathlib import Path

from _common import load_module, run_as_judged


def _ms_per_call(model, sets: list, seconds: float) -> float:
    blocks, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds or not blocks:
        kept, t0 = [], time.perf_counter()
        for args in sets:
            kept.append(model(*args))
        blocks.append((time.perf_counter() - t0) * 1e3 / len(sets))
    return statistics.median(blocks)


def _spin() -> None:
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", type=Path)
    parser.add_argument("kernels", nargs="+", help="NAME=KERNEL.py: a file defining ModelNew")
    parser.add_argument("--size", default="small", help="the problem's size, as agentkern's --size")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--pool-mb", type=float, default=200.0)
    parser.add_argument("--hot", action="store_true", help="20 input sets, mostly in the caches")
    parser.add_argument("--threads", type=int, help="torch's thread count (the harness's by default)")
    parser.add_argument("--busy", action="store_true", help="another process spinning on the CPU meanwhile")
    opts = parser.parse_args()
    run_as_judged()

    import torch

    if opts.threads:
        torch.set_num_threads(opts.threads)

    from agentkern.sizes import apply_size

    problem = load_module(opts.problem, "problem")
    apply_size(problem, opts.size)
    sides = {}
    for i, spec in enumerate(opts.kernels):
        name, _, path = spec.partition("=")
        torch.manual_seed(0)
        sides[name] = load_module(Path(path), f"kernel_{i}").ModelNew(*problem.get_init_inputs()).eval()
    torch.manual_seed(0)
    sides["eager"] = problem.Model(*problem.get_init_inputs()).eval()
    one = problem.get_inputs()
    set_bytes = sum(t.numel() * t.element_size() for t in one if isinstance(t, torch.Tensor))
    count = 20 if opts.hot else max(20, int(opts.pool_mb * 2**20 // max(set_bytes, 1)))
    sets = []
    for seed in range(count):
        torch.manual_seed(seed)
        sets.append(problem.get_inputs())
    rounds = []
    spinner = multiprocessing.get_context("fork").Process(target=_spin, daemon=True) if opts.busy else None
    if spinner:
        spinner.start()
    with torch.no_grad():
        for model in sides.values():
            _ms_per_call(model, sets, 0.3)  # warm-up: builds, first-touch of the pool
        start = time.perf_counter()
        while time.perf_counter() - start < opts.seconds or not rounds:
            rounds.append({name: _ms_per_call(model, sets, 0.15) for name, model in sides.items()})
    if spinner:
        spinner.terminate()
    first = next(iter(sides))
    print(
        f"{opts.problem.name} at --size {opts.size}: {count} input sets of {set_bytes / 2**20:.2f} MiB, {len(rounds)} rounds"
        f"{', ' + str(torch.get_num_threads()) + ' threads'}{', another process busy' if spinner else ''}"
    )
    for name in sides:
        ms = statistics.median(r[name] for r in rounds)
        ratio = statistics.median(r[name] / r[first] for r in rounds)
        print(f"  {name:16s} {ms:9.4f} ms a call   {ratio:6.3f}x {first}'s time")


if __name__ == "__main__":
    main()
