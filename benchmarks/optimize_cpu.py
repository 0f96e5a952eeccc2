"""Benchmark: `agentkern optimize` with the built-in model on this machine's CPU.

    python benchmarks/optimize_cpu.py [--max-iters 6] [problems ...]

For each problem (default: softmax, matmul, and two problem files no test uses, examples/unseen/) it runs
the whole loop and reports the best kernel's speedup over torch eager, measured by the harness (reference
and kernel timed interleaved in one process), and for matmul its GFLOPS and the fraction of the CPU's
peak. It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = [
    "softmax",
    "matmul",
    str(ROOT / "examples/unseen/scaled_log_softmax.py"),
    str(ROOT / "examples/unseen/rmsnorm_by_hand.py"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", default=DEFAULT)
    parser.add_argument("--max-iters", type=int, default=6)
    args = parser.parse_args()
    os.environ.setdefault("AGENTKERN_HOME", tempfile.mkdtemp(prefix="agentkern-bench-"))

    from agentkern.loop import run as optimize
    from agentkern.loop.deps import OptimizeOptions
    from agentkern.loop.progress import PlainProgress
    from agentkern.targets import get_target

    cpu = get_target("cpu")
    peak = cpu.peak_tflops["fp32"] * 1e3
    print(
        f"cpu: {cpu.display_name}, {cpu.cores} cores, fp32 peak {peak:.0f} GFLOP/s ({cpu.sources.get('peak_tflops.fp32', '')})"
    )
    print("| problem | iterations | candidates | best strategy | torch ms | kernel ms | speedup | GFLOPS | of peak |")
    print("|---|---|---|---|---|---|---|---|---|")
    for problem in args.problems:
        result = optimize.run(
            OptimizeOptions(problem=problem, target="cpu", max_iters=args.max_iters), on_event=PlainProgress(sys.stderr)
        )
        best = result["best"]
        name = Path(problem).stem
        if best is None:
            print(f"| {name} | {result['iterations']} | {result['candidates']} | none correct | | | | | |")
            continue
        gflops = share = ""
        if name == "matmul":
            flops = 2 * 1024**3
            gflops = f"{flops / (best['kernel_ms'] / 1e3) / 1e9:.0f}"
            share = f"{flops / (best['kernel_ms'] / 1e3) / 1e9 / peak:.0%}"
        print(
            f"| {name} | {result['iterations']} | {result['candidates']} | {best['strategy']} | "
            f"{best['reference_ms']:.3f} | {best['kernel_ms']:.3f} | {best['speedup']:.2f}x | {gflops} | {share} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
