"""Benchmark: on a GPU, a kernel's speedup as the harness judges it beside the same pair timed in-process.

    python benchmarks/gpu_timing_truth.py PROBLEM.py KERNEL.py [--target auto] [--pool 4]

In-process (trusted kernels only): both models in this one process at the problem's gpu size, each timed
with CUDA events by triton.testing.do_bench (median), cycling through a pool of `--pool` input sets drawn
by get_inputs() so that repeated calls do not read the L2 alone. Then `evaluate` judges the kernel as
`agentkern eval` does (runners in their sandboxes, inputs and outputs in the judge's device memory). The
table puts the two side by side; the ratio of the speedups is what the judge's method costs or adds. It
prints figures; it asserts nothing. Needs a CUDA device.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
from pathlib import Path

import torch


def _load(path: Path, name: str, size: str = "gpu"):
    from agentkern.harness.loading import load_problem_module

    if name == "problem":
        return load_problem_module(str(path), "truth_problem", size)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def in_process_ms(problem, kernel_module, pool: int) -> tuple[float, float]:
    import triton.testing

    torch.manual_seed(0)
    init = problem.get_init_inputs()
    torch.manual_seed(1)
    reference = problem.Model(*init).cuda().eval()
    torch.manual_seed(1)
    kernel = kernel_module.ModelNew(*init).cuda().eval()
    inputs = [[x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()] for _ in range(pool)]
    with torch.no_grad():
        assert all(torch.allclose(kernel(*a), reference(*a), atol=1e-2, rtol=1e-2) for a in inputs[:1])
        times = []
        for model in (reference, kernel):
            cycle = itertools.cycle(inputs)
            times.append(triton.testing.do_bench(lambda m=model, c=cycle: m(*next(c)), warmup=50, rep=300))
    return times[0], times[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", type=Path)
    parser.add_argument("kernel", type=Path)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--pool", type=int, default=4)
    parser.add_argument("--mode", default="offline")
    args = parser.parse_args()

    from agentkern.harness.evaluate import evaluate
    from agentkern.types import EvalOptions

    ref_ms, kernel_ms = in_process_ms(_load(args.problem, "problem"), _load(args.kernel, "kernel"), args.pool)
    result = evaluate(str(args.problem), args.kernel, args.target, EvalOptions(mode=args.mode, memory_limit_gb=64))
    timing = result.details.get("timing") or {}
    row = {
        "problem": args.problem.stem,
        "kernel": args.kernel.name,
        "device": torch.cuda.get_device_name(),
        "in_process": {"reference_ms": ref_ms, "kernel_ms": kernel_ms, "speedup": ref_ms / kernel_ms},
        "judged": {
            "status": result.status,
            "error": result.error,
            "reference_ms": result.reference_ms,
            "kernel_ms": result.kernel_ms,
            "speedup": result.speedup,
            "isolation": result.details.get("isolation"),
            "blocks": timing.get("blocks"),
            "calls_per_block": timing.get("calls_per_block"),
            "handshake_us": timing.get("handshake_us"),
            "stopped_at_wall_s": timing.get("stopped_at_wall_s"),
            "wall_s": result.details.get("wall_s"),
        },
    }
    print(json.dumps(row))
    judged = row["judged"]
    print(
        f"{row['problem']:<14} in-process {ref_ms:8.4f} / {kernel_ms:8.4f} ms = {ref_ms / kernel_ms:6.2f}x   "
        f"judged {judged['status']} {judged['reference_ms'] or 0:8.4f} / {judged['kernel_ms'] or 0:8.4f} ms = "
        f"{judged['speedup'] or 0:6.2f}x  ({judged['isolation']})"
    )


if __name__ == "__main__":
    main()
