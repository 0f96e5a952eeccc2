"""Benchmark: agentkern's CPU kernels side by side with torch eager, torch.compile and the copy bandwidth.

    python benchmarks/cpu_side_by_side.py [--only NAME ...] [--params '{"micro": "12x32"}'] [--blocks 40] [--warm]
                                          [--json OUT.json]

One process, one run, every column timed in the same interleaved blocks: the kernel the built-in policy
renders for the problem with its host defaults (`templates.default_params`, or --params), the problem's own
Model in eager mode (for the GEMMs that is torch.matmul / F.linear: oneDNN or MKL, whichever this torch
calls), the same Model under torch.compile (Inductor's C++ backend), and a copy of as many bytes as the
problem moves (`x.copy_(y)` of buffers 4x the last-level cache, torch's own threads: the copy-bandwidth bound of a
memory-bound kernel, measured once per run).
Each call gets inputs of its own from a pool twice the last-level cache, at most 64 input sets, so memory-bound
kernels read from memory as they would in a model (and as the harness's fresh inputs make them), unless the 64
sets fit the cache the CPU reports (a VM that reports its host's 480 MiB L3: then they come from the L3, and the
harness's figures are the ones to trust; docs/bench.md, "Fresh operands"); `--warm` reuses one
input set instead (cache-resident inputs: what a kernel costs once its operands are in the cache). Medians of the
blocks; ratios are eager_ms / kernel_ms and compile_ms / kernel_ms (above 1: the kernel is faster), and
`of_copy_bw` is the kernel's bytes per second over the copy's (1.0: at the copy bandwidth; a problem whose
data fits the cache can go above it).

It runs in the environment the harness gives what it times (`_common.run_as_judged`: malloc's thresholds, a
runner's OpenMP binding, AGENTKERN_CPU_ISA's level for torch).

Trusted kernels only (the templates'): this runs them in its own process, outside the harness. It prints
figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import load_module, render_builtin, run_as_judged

run_as_judged()  # before torch loads

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = ROOT / "kernels_dataset" / "problems"

# (row name, dataset problem, size constants set on it): the GEMM shapes issue 18 names, then memory-bound ops.
CASES = [
    ("gemm 1024", "matmul", {"M": 1024, "N": 1024, "K": 1024}),
    ("gemm 2048", "matmul", {"M": 2048, "N": 2048, "K": 2048}),
    ("gemm skinny 8192x64x512", "matmul_tall_skinny", {}),
    ("gemm batched", "bmm", {}),
    ("linear + bias", "linear", {}),
    ("matvec 4096x4096", "matvec", {}),
    ("relu", "relu", {}),
    ("add_relu", "add_relu", {}),
    ("sum_rows", "sum_rows", {}),
    ("softmax", "softmax", {}),
    ("layernorm", "layernorm", {}),
    ("rmsnorm", "rmsnorm", {}),
]


def _llc_bytes() -> int:
    try:
        return int(os.sysconf("SC_LEVEL3_CACHE_SIZE")) or 32 << 20
    except (ValueError, OSError):
        return 32 << 20


def _render(problem_path: Path, sizes: dict, params: dict | None, out_dir: Path):
    src = problem_path.read_text()
    for name, value in sizes.items():  # the case's size, written where the problem declares it
        src += f"\n{name} = {value}\n"
    sized = out_dir / problem_path.name
    sized.write_text(src)
    kernel = out_dir / f"kernel_{problem_path.stem}.py"
    family, chosen = render_builtin(sized, kernel, params)
    return sized, kernel, family, chosen


def _median_ms(fn, pool: list, blocks: list[list[float]], calls: int, index: int) -> None:
    t0 = time.perf_counter()
    for i in range(calls):
        fn(*pool[(index + i) % len(pool)])
    blocks.append((time.perf_counter() - t0) / calls * 1e3)


def copy_bandwidth_gbs(n_blocks: int) -> float:
    """Bytes read and written per second by `dst.copy_(src)` on buffers 4x the last-level cache (from memory)."""
    n = 2 * _llc_bytes()  # floats: each buffer 8x the cache's bytes
    src, dst = torch.randn(n), torch.empty(n)
    times: list[float] = []
    for _ in range(n_blocks):
        _median_ms(lambda: dst.copy_(src), [()], times, 3, 0)
    return 2 * n * 4 / (statistics.median(times) * 1e-3) / 1e9


def measure(
    name: str,
    problem_stem: str,
    sizes: dict,
    params: dict | None,
    n_blocks: int,
    tmp: Path,
    copy_gbs: float,
    warm: bool = False,
) -> dict:
    from agentkern.harness.meta_work import meta_work

    problem_path, kernel_path, family, chosen = _render(PROBLEMS / f"{problem_stem}.py", sizes, params, tmp)
    problem = load_module(problem_path, f"sbs_problem_{problem_stem}")
    kernel = load_module(kernel_path, f"sbs_kernel_{problem_stem}")
    work = meta_work(problem)
    init = problem.get_init_inputs()
    torch.manual_seed(0)
    eager = problem.Model(*init).eval()
    torch.manual_seed(0)
    ours = kernel.ModelNew(*init).eval()
    torch.manual_seed(0)
    compiled = torch.compile(problem.Model(*init).eval())  # the same parameters: the same seed
    in_bytes = sum(t.numel() * t.element_size() for t in problem.get_inputs() if isinstance(t, torch.Tensor))
    pool_size = 1 if warm else max(2, min(64, 2 * _llc_bytes() // max(in_bytes, 1) + 1))
    pool = [problem.get_inputs() for _ in range(pool_size)]
    with torch.no_grad():
        expect, got = eager(*pool[0]), ours(*pool[0])
        err = (expect.float() - got.float()).abs().max().item()
        compiled(*pool[0])  # the compilation, untimed
        single = max(_one_call_s(eager, pool[0]), _one_call_s(ours, pool[0]), 1e-6)
        calls = max(3, min(200, int(0.02 / single)))  # blocks of about 20 ms
        sides = {"kernel": ours, "eager": eager, "compile": compiled}
        times: dict[str, list[float]] = {k: [] for k in sides}
        for b in range(n_blocks):
            order = list(sides.items()) if b % 2 == 0 else list(sides.items())[::-1]
            for side, fn in order:
                _median_ms(fn, pool, times[side], calls, b * calls)
    ms = {k: statistics.median(v) for k, v in times.items()}
    kernel_gbs = work["bytes"] / (ms["kernel"] * 1e-3) / 1e9
    return {
        "case": name,
        "problem": problem_stem,
        "family": family,
        "params": chosen,
        "max_abs_err": err,
        "kernel_ms": ms["kernel"],
        "eager_ms": ms["eager"],
        "compile_ms": ms["compile"],
        "vs_eager": ms["eager"] / ms["kernel"],
        "vs_compile": ms["compile"] / ms["kernel"],
        "kernel_gflops": work["flops"] / (ms["kernel"] * 1e-3) / 1e9,
        "eager_gflops": work["flops"] / (ms["eager"] * 1e-3) / 1e9,
        "kernel_gbs": kernel_gbs,
        "of_copy_bw": kernel_gbs / copy_gbs,
        "calls_per_block": calls,
        "blocks": n_blocks,
    }


def _one_call_s(fn, args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], help="a case's problem name (repeatable)")
    parser.add_argument("--params", type=json.loads, default=None, help="template parameters over the defaults")
    parser.add_argument(
        "--blocks",
        type=int,
        default=40,
        help="interleaved blocks of ~20 ms per column (a noisy 2-core VM moved 1024^3 from 0.74x to 0.95x of MKL "
        "between two runs of 5 blocks minutes apart; 60 blocks gave 0.95x twice: docs/bench.md, 2026-12-06)",
    )
    parser.add_argument(
        "--warm", action="store_true", help="one input set for every call (cache-resident), not a fresh one each call"
    )
    parser.add_argument("--dataset", action="store_true", help="every problem of kernels_dataset instead")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = parser.parse_args()
    cases = CASES
    if args.dataset:  # every problem of the dataset at its cpu size
        cases = [(p.stem, p.stem, {}) for p in sorted(PROBLEMS.glob("*.py")) if not p.name.startswith("_")]
    cases = [c for c in cases if not args.only or c[1] in args.only or c[0] in args.only]
    if not cases:
        sys.exit(f"no case matches {args.only}; cases: {', '.join(c[1] for c in CASES)}")
    from agentkern.targets.host import cpu_description

    host = cpu_description()
    copy_gbs = copy_bandwidth_gbs(min(args.blocks, 7))  # each block copies 8x the LLC three times: seconds each
    print(
        f"host: {host}; torch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"copy bandwidth {copy_gbs:.1f} GB/s (read + write, from memory)\n"
    )
    print(
        "| case | kernel ms | eager ms | compile ms | vs eager | vs compile | kernel GFLOP/s | kernel GB/s | of copy BW |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    with tempfile.TemporaryDirectory(prefix="agentkern-sbs-") as tmp:
        for name, stem, sizes in cases:
            try:
                r = measure(name, stem, sizes, args.params, args.blocks, Path(tmp), copy_gbs, args.warm)
            except Exception as exc:  # one case that cannot render or run is a row, not the end of the table
                print(f"| {name} | {type(exc).__name__}: {str(exc).splitlines()[0][:120]} | | | | | | | |", flush=True)
                continue
            rows.append(r)
            print(
                f"| {name} | {r['kernel_ms']:.3f} | {r['eager_ms']:.3f} | {r['compile_ms']:.3f} | "
                f"{r['vs_eager']:.2f}x | {r['vs_compile']:.2f}x | {r['kernel_gflops']:.1f} | {r['kernel_gbs']:.1f} | "
                f"{r['of_copy_bw']:.2f} |",
                flush=True,
            )
    if args.json:
        args.json.write_text(
            json.dumps({"host": host, "torch": torch.__version__, "copy_gbs": copy_gbs, "rows": rows}, indent=1)
        )


if __name__ == "__main__":
    main()
