"""`agentkern bench` through the command line: a small suite with one problem the built-in policy solves and
one it does not recognise, its JSON report, and the comparison with a previous report."""

import json

from bench_inputs import SIZED_PROBLEM, bench_report, row
from support import run_cli

SORT_PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sort(x, dim=-1).values


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return []
"""


def test_bench_runs_a_suite_with_one_solvable_and_one_unsupported_problem(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "relu_small.py").write_text(SIZED_PROBLEM)
    (suite / "sort_rows.py").write_text(SORT_PROBLEM)
    previous = tmp_path / "previous.json"
    previous.write_text(json.dumps(bench_report(row("relu_small", eager=1000.0), row("sort_rows", "unsupported"))))
    out = tmp_path / "report.json"
    proc = run_cli(
        "bench",
        str(suite),
        "--target",
        "cpu",
        "--max-iters",
        "1",
        "--json",
        "--out",
        str(out),
        "--compare",
        str(previous),
        timeout=600,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]  # relu_small got "slower" than the made-up 1000x
    report = json.loads(proc.stdout)
    assert json.loads(out.read_text())["metrics"] == report["metrics"]
    relu, sort = report["problems"]
    assert relu["name"] == "relu_small" and relu["status"] == "ok" and relu["speedup_eager"] > 0
    assert relu["size"] == "cpu" and relu["candidates"] == 2 and relu["kernel_path"].endswith(".py")
    assert relu["speedup_compile"] > 0 and relu["compile_factor"] > 0  # torch.compile timed on the CPU
    # the bridge through eager (bench/compile_speedup.py): eager's times beside the candidates and in each baseline run
    assert relu["eager_ms"] > 0 and relu["eager_ms_median"] > 0 and 1 <= relu["compile_runs"] <= 3
    assert len(relu["eager_ms_in_baselines"]) == relu["compile_runs"]
    assert relu["eager_ms_in_baseline"] in relu["eager_ms_in_baselines"]
    assert sort["status"] == "unsupported" and "does not recognise" in sort["reason"]
    m = report["metrics"]
    assert m["fast_0"] == 0.5 and m["problems"] == 2 and m["pass_at_k"] == 0.5
    assert report["comparison"]["regressed"] and "relu_small: SLOWER" in proc.stderr
    assert "[1/2] relu_small: ok" in proc.stderr and "[2/2] sort_rows: unsupported" in proc.stderr
