"""Benchmark: what one call of a built-in C++ kernel costs beyond its work, torch-op launcher vs ctypes launcher.

    python benchmarks/launcher_overhead.py [--calls 30000]

For a few dataset problems cut to one row (1 x 1024: the work is next to nothing), one process times, in
microseconds per call: the problem's own Model in eager mode (one ATen op), the template's kernel called
through its torch custom op (`_OP`, registered in C++: agentkern/native.py, compile_with_ops), and the same
kernel through the ctypes launcher (the file imported again with AGENTKERN_NO_TORCH_OPS=1). Each twice:
bare, as in a user's model, and under the harness's op allowlist (harness/allowlist.py), a Python dispatch
mode that charges every aten op a candidate dispatches itself (the judged figure; the reference is timed
bare there, so eager is bare in both rows). It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
from _common import load_module, render_builtin

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = ["relu", "add_relu", "sum_rows", "softmax", "layernorm", "rmsnorm"]


def _per_call_us(model, args: list, calls: int) -> float:
    for _ in range(calls // 10):
        model(*args)
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls // 5):
            model(*args)
        runs.append((time.perf_counter() - t0) / (calls // 5) * 1e6)
    return statistics.median(runs)


def _one_row(problem) -> list:
    """The problem's inputs with every dim but the last cut to 1: one row (a norm needs its whole last dim)."""
    return [
        t[tuple(slice(0, 1) for _ in range(t.dim() - 1))].contiguous() if isinstance(t, torch.Tensor) else t
        for t in problem.get_inputs()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=30000)
    args = parser.parse_args()

    from agentkern.harness.allowlist import AllowlistMode
    from agentkern.targets.host import cpu_description

    print(f"host: {cpu_description()}; torch {torch.__version__}\n")
    print("| problem | mode | eager us | torch-op launcher us | ctypes launcher us | saved per call |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="agentkern-launcher-") as tmp, torch.no_grad():
        for name in PROBLEMS:
            path = ROOT / "kernels_dataset" / "problems" / f"{name}.py"
            problem = load_module(path, f"lo_problem_{name}")
            kernel_path = Path(tmp) / f"kernel_{name}.py"
            render_builtin(path, kernel_path)
            with_op = load_module(kernel_path, f"lo_op_{name}")
            os.environ["AGENTKERN_NO_TORCH_OPS"] = "1"
            try:
                with_ctypes = load_module(kernel_path, f"lo_ctypes_{name}")
            finally:
                del os.environ["AGENTKERN_NO_TORCH_OPS"]
            if with_op._OP is None or with_ctypes._OP is not None:
                print(f"| {name} | no torch op built here (torch's headers missing?) | | | | |")
                continue
            init = problem.get_init_inputs()
            torch.manual_seed(0)
            eager = problem.Model(*init).eval()
            torch.manual_seed(0)
            op_model = with_op.ModelNew(*init).eval()
            torch.manual_seed(0)
            ctypes_model = with_ctypes.ModelNew(*init).eval()
            inputs = _one_row(problem)
            expected = eager(*inputs)
            for model in (op_model, ctypes_model):
                torch.testing.assert_close(model(*inputs), expected, rtol=1e-4, atol=1e-4)
            eager_us = _per_call_us(eager, inputs, args.calls)  # bare in both rows: the harness times it so
            for mode_name, mode in (("bare", contextlib.nullcontext), ("allowlist", AllowlistMode)):
                with mode():
                    us = [_per_call_us(m, inputs, args.calls) for m in (op_model, ctypes_model)]
                print(
                    f"| {name} | {mode_name} | {eager_us:.2f} | {us[0]:.2f} | {us[1]:.2f} | {us[1] - us[0]:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
