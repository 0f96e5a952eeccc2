"""Benchmark: the GPU cost model's predictions against published measurements (issue 15).

    python benchmarks/costmodel_calibration.py [--target h100]

For each measurement in knowledge_base/calibration/gpu_measurements.json on the target, a problem of that
shape is written (its cpu size small, its gpu size the measured one), the built-in Triton template of the
same algorithm is rendered, and `agentkern eval` judges it as it would any candidate for a GPU that is not
here: checked small in the interpreter, planned and compiled at the measured shape, priced by
targets/kernel_model.py. The predicted TFLOP/s (the measurement's own FLOP convention: 4 B H S^2 D for an
attention forward) is set beside the measured one: relative error per shape, their median, and the rank
correlation (Spearman) across shapes. The measured kernel is not ours (the table says which it was), so the
error mixes the model's and the two kernels' differences: it says how far to trust the figures, no more.
It prints a table; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASUREMENTS = ROOT / "knowledge_base" / "calibration" / "gpu_measurements.json"
ATTENTION = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal={causal})


batch, heads, seq, head_dim = 1, 2, 64, 64
SIZES = {{"cpu": {{"batch": 1, "heads": 2, "seq": 64, "head_dim": 64}}, "gpu": {gpu}}}


def get_inputs():
    return [torch.randn(batch, heads, seq, head_dim, dtype=torch.{dtype}) for _ in range(3)]


def get_init_inputs():
    return []
"""
# The Triton tutorial's forward on Hopper tiles 128 query rows by 64-128 keys with 8 warps: the closest of ours.
TEMPLATE_PARAMS = {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3}


def _spearman(xs: list[float], ys: list[float]) -> float:
    rank = lambda v: {x: i for i, x in enumerate(sorted(v))}  # noqa: E731 - distinct values here
    rx, ry = rank(xs), rank(ys)
    n = len(xs)
    d2 = sum((rx[x] - ry[y]) ** 2 for x, y in zip(xs, ys))
    return 1 - 6 * d2 / (n * (n * n - 1)) if n > 1 else float("nan")


def main() -> None:
    from agentkern.harness.evaluate import evaluate
    from agentkern.policies.builtin import templates
    from agentkern.policies.builtin.analysis import analyze_problem
    from agentkern.types import EvalOptions

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="h100")
    args = parser.parse_args()
    rows = []
    folder = Path(tempfile.mkdtemp(prefix="agentkern-calibration-"))
    for m in json.loads(MEASUREMENTS.read_text())["measurements"]:
        if m["gpu"] != args.target or m["op"] != "attention":
            continue
        s = m["shape"]
        problem = folder / f"attention_{s['batch']}x{s['heads']}x{s['seq']}x{s['head_dim']}.py"
        problem.write_text(ATTENTION.format(causal=m["causal"], gpu=json.dumps(s), dtype=m["dtype"]))
        spec = analyze_problem(problem, size="cpu")
        solution = problem.with_name(problem.stem + "_triton.py")
        solution.write_text(templates.render(spec, TEMPLATE_PARAMS, "triton"))
        verdict = evaluate(problem, solution, args.target, EvalOptions(trials=2, second_shape="off"))
        prediction = verdict.details.get("prediction") or {}
        if not prediction.get("kernel_ms"):
            print(f"{problem.stem}: {verdict.status} {verdict.error or prediction.get('unavailable')}")
            continue
        flops = 4 * s["batch"] * s["heads"] * s["seq"] ** 2 * s["head_dim"] / (2 if m["causal"] else 1)
        predicted = flops / (prediction["kernel_ms"] * 1e-3) / 1e12
        rows.append((s, m["tflops"], predicted, m["kernel"]))
    if not rows:
        print(f"no measurement on {args.target} to compare with")
        return
    print(f"| shape (B, H, S, D) | measured TFLOP/s ({rows[0][3]}) | predicted TFLOP/s (our template) | error |")
    print("|---|---|---|---|")
    errors = []
    for s, measured, predicted, _ in rows:
        signed = (predicted - measured) / measured
        errors.append(abs(signed))
        print(
            f"| {s['batch']}, {s['heads']}, {s['seq']}, {s['head_dim']} | {measured:.0f} | {predicted:.0f} | {signed:+.0%} |"
        )
    measured, predicted = [r[1] for r in rows], [r[2] for r in rows]
    print(
        f"\nmedian relative error {statistics.median(errors):.0%}, rank correlation (Spearman) "
        f"{_spearman(measured, predicted):.2f}, over {len(rows)} shapes on {args.target}"
    )


if __name__ == "__main__":
    main()
