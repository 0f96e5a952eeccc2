"""One problem's built-in C++ kernel under several template parameter sets, side by side with torch eager in one
process: which parameters pay on this host, measured as ratios in one run.

    python benchmarks/template_params.py kernels_dataset/problems/matmul_small.py --params '{"amx": 0}'

Each `--params` (JSON, over the host's defaults as the loop picks them) adds a kernel; the host's defaults
always run as `default`. Every kernel is checked against eager first (max abs diff printed). Blocks of about
20 ms take turns (eager, then each kernel), 9 by default; the table gives each side's median block, per call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import load_module, render_builtin, run_as_judged

run_as_judged()  # before torch loads

import torch  # noqa: E402


def _block_ms(fn, args, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - t0) / calls * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", type=Path, help="a problem file (KernelBench format)")
    parser.add_argument("--params", type=json.loads, action="append", default=[], help="a parameter set (JSON)")
    parser.add_argument("--blocks", type=int, default=9)
    args = parser.parse_args()
    if not args.problem.is_file():
        sys.exit(f"template_params: no problem file at {args.problem}")
    problem = load_module(args.problem, "tp_problem")
    init = problem.get_init_inputs()
    torch.manual_seed(0)
    eager = problem.Model(*init).eval()
    sides = {"eager": eager}
    chosen = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, params in enumerate([{}, *args.params]):
            name = "default" if i == 0 else json.dumps(params, sort_keys=True)
            path = Path(tmp) / f"kernel_{i}.py"
            _family, chosen[name] = render_builtin(args.problem, path, params)
            torch.manual_seed(0)
            sides[name] = load_module(path, f"tp_kernel_{i}").ModelNew(*init).eval()
        inputs = problem.get_inputs()
        with torch.no_grad():
            expect = eager(*inputs)
            errors = {n: (expect.float() - fn(*inputs).float()).abs().max().item() for n, fn in sides.items()}
            t0 = time.perf_counter()
            eager(*inputs)
            calls = max(3, min(500, int(0.02 / max(time.perf_counter() - t0, 1e-6))))
            times: dict[str, list[float]] = {n: [] for n in sides}
            for _ in range(args.blocks):
                for n, fn in sides.items():
                    fn(*inputs)  # out of the block: its first call after the others'
                    times[n].append(_block_ms(fn, inputs, calls))
    ms = {n: statistics.median(v) for n, v in times.items()}
    print(f"{args.problem.stem}: {args.blocks} blocks of {calls} calls; torch {torch.__version__}")
    print("| kernel | ms | vs eager | max abs diff | parameters |")
    print("|---|---|---|---|---|")
    for n in sides:
        params = "" if n == "eager" else json.dumps(chosen[n], sort_keys=True)
        print(f"| {n} | {ms[n]:.3f} | {ms['eager'] / ms[n]:.2f}x | {errors[n]:.2g} | {params} |")


if __name__ == "__main__":
    main()
