"""Benchmark: evaluate every kernel in kernels_dataset/solutions on a target and print a Markdown table.

    python benchmarks/shipped_kernels.py [--target cpu] [--mode offline|server]

Each row is one `agentkern eval` (reference and kernel timed interleaved in one process, fresh inputs per
call). It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--mode", default="offline", choices=["offline", "server"])
    args = parser.parse_args()

    from agentkern.errors import UserError
    from agentkern.harness.evaluate import evaluate
    from agentkern.types import EvalOptions

    print("| solution | status | reference ms | kernel ms | speedup | roofline | bound |")
    print("|---|---|---|---|---|---|---|")
    for path in sorted((ROOT / "kernels_dataset" / "solutions").glob("*.py")):
        problem = path.stem.rsplit("_", 1)[0]
        opts = EvalOptions(mode=args.mode, trials=2 if path.stem.endswith("_triton") else 5)
        try:
            r = evaluate(problem, path, args.target, opts)
        except UserError as exc:  # e.g. a CUDA kernel on --target cpu
            print(f"| {path.name} | skipped: {exc} | | | | | |")
            continue
        fmt = lambda v, spec: "n/a" if v is None else format(v, spec)  # noqa: E731
        print(
            f"| {path.name} | {r.status} | {fmt(r.reference_ms, '.3f')} | {fmt(r.kernel_ms, '.3f')} | "
            f"{fmt(r.speedup, '.2f')} | {fmt(r.roofline_fraction, '.1%')} | {r.details.get('bound', 'n/a')} |"
        )


if __name__ == "__main__":
    main()
