"""The command line as a user (or a CI job) meets it: exit codes, one-line errors, stable JSON keys."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

SOFTMAX_TORCH = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)
"""


def run_cli(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "agentkern", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ},
    )


@pytest.fixture
def honest_solution(tmp_path):
    path = tmp_path / "softmax_torch.py"
    path.write_text(SOFTMAX_TORCH)
    return path


def _bad_problem(tmp_path):
    p = tmp_path / "not_a_problem.py"
    p.write_text("x = 1\n")
    return str(p)


@pytest.mark.parametrize(
    "make_args, message",
    [
        (lambda tmp, sol: ["eval", str(tmp / "missing.py"), str(sol), "--target", "cpu"], "problem file not found"),
        (lambda tmp, sol: ["eval", "softmaxx", str(sol), "--target", "cpu"], "unknown problem 'softmaxx'"),
        (lambda tmp, sol: ["eval", _bad_problem(tmp), str(sol), "--target", "cpu"], "is not a KernelBench problem"),
        (lambda tmp, sol: ["eval", "softmax", str(tmp / "nope.py"), "--target", "cpu"], "solution file not found"),
        (
            lambda tmp, sol: ["eval", "softmax", str(ROOT / "kernels_dataset/problems/relu.py"), "--target", "cpu"],
            "defines no ModelNew",
        ),
        (lambda tmp, sol: ["eval", "softmax", str(sol), "--target", "tpu9"], "unknown target 'tpu9'"),
        (
            lambda tmp, sol: ["eval", "softmax", str(sol), "--target", "cpu", "--tol", "float32"],
            "--tol expects DTYPE=VALUE",
        ),
        (
            lambda tmp, sol: ["eval", "softmax", str(sol), "--target", "cpu", "--mode", "turbo"],
            "--mode must be offline or server",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, honest_solution, make_args, message):
    proc = run_cli(*make_args(tmp_path, honest_solution))
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_eval_json_has_the_stable_keys(honest_solution):
    proc = run_cli("eval", "softmax", str(honest_solution), "--target", "cpu", "--json", "--seed", "7")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result) == {
        "status",
        "correct",
        "speedup",
        "reference_ms",
        "kernel_ms",
        "roofline_fraction",
        "error",
        "details",
    }
    assert result["status"] == "ok" and result["correct"] is True and result["error"] is None
    assert result["kernel_ms"] > 0 and result["reference_ms"] > 0
    assert result["speedup"] == pytest.approx(result["reference_ms"] / result["kernel_ms"])
    assert 0 < result["roofline_fraction"]
    assert result["details"]["seeds"] == [7, 8, 9, 10, 11]


def test_a_verdict_other_than_ok_still_exits_0(tmp_path):
    path = tmp_path / "cheat.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, -1)\n"
    )
    proc = run_cli("eval", "softmax", str(path), "--target", "cpu", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "rejected"


def test_human_output_names_the_verdict_and_speedup(honest_solution):
    proc = run_cli("eval", "softmax", str(honest_solution), "--target", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok") and "speedup" in proc.stdout


def test_targets_json_lists_the_catalog():
    proc = run_cli("targets", "--json")
    assert proc.returncode == 0, proc.stderr
    names = {t["name"] for t in json.loads(proc.stdout)}
    assert {"cpu", "a100", "h100", "h200", "l4", "l40s", "rtx4090"} <= names


@pytest.mark.parametrize(
    "args, message",
    [
        (["optimize", "softmax", "--target", "h100", "--backend", "cuda"], "no cuda template for softmax"),
        (["optimize", "--target", "cpu"], "say which problem to optimise"),
        (["optimize", "softmax", "--target", "cpu", "--backend", "triton"], "writes GPU kernels"),
        (["optimize", "nope_op", "--target", "cpu"], "unknown problem 'nope_op'"),
        (["optimize", "softmax", "--resume", "no-such-run"], "no run 'no-such-run'"),
    ],
)
def test_optimize_bad_input_is_one_line_and_exit_2(args, message):
    proc = run_cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_optimize_says_plainly_when_the_builtin_model_does_not_recognise_a_problem(tmp_path):
    problem = tmp_path / "sort_problem.py"
    problem.write_text(
        "import torch\nimport torch.nn as nn\n"
        "class Model(nn.Module):\n    def forward(self, x):\n        return torch.sort(x, dim=-1).values\n"
        "def get_inputs():\n    return [torch.randn(64, 64)]\n"
        "def get_init_inputs():\n    return []\n"
    )
    proc = run_cli("optimize", str(problem), "--target", "cpu")
    assert proc.returncode == 2, proc.stderr
    assert "does not recognise" in proc.stderr and "--model" in proc.stderr
