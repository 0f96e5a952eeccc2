"""The command line as a user (or a CI job) meets it: exit codes, one-line errors, stable JSON keys."""

import json
import os
import subprocess
import sys
import tomllib

import pytest
from support import ROOT

# An honest kernel: the shipped C++ softmax (a ModelNew that computes with torch ops is a fallback, rejected).
SOFTMAX_CPP = ROOT / "kernels_dataset" / "solutions" / "softmax_cpp.py"


def run_cli(*args, timeout=300, **env):
    return subprocess.run(
        [sys.executable, "-m", "agentkern", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, **env},
    )


@pytest.fixture
def honest_solution(tmp_path):
    path = tmp_path / "softmax_cpp.py"
    path.write_text(SOFTMAX_CPP.read_text())
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
    assert result["details"]["seeds"] == list(range(7, 16))  # 9 trials, the default


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
        (  # the family has a Triton template, which cannot take the problem's row softmax: said once, up front
            ["optimize", "gemm_gelu_softmax", "--target", "h100"],
            "cannot write this problem: no triton linear template reads a softmax over the output's rows",
        ),
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


def _one_line_exit_2(proc, message):
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout and "╭" not in proc.stderr  # no typer box


@pytest.mark.parametrize(
    "args, message",
    [
        (["optimize", "softmax", "--max-iters", "-1"], "Invalid value for '--max-iters'"),
        (["optimize", "softmax", "--beam", "0"], "Invalid value for '--beam'"),
        (["optimize", "softmax", "--patience", "0"], "Invalid value for '--patience'"),
        (["optimize", "softmax", "--workers", "0"], "Invalid value for '--workers'"),
        (["optimize", "softmax", "--time-budget", "-5"], "Invalid value for '--time-budget'"),
        (["optimize", "softmax", "--max-iters", "two"], "Invalid value for '--max-iters'"),
        (["optimize", "softmax", "--no-such-option"], "No such option: --no-such-option"),
        (["eval", "softmax"], "Missing argument"),
        (["bench", "kernels_dataset", "--limit", "0"], "Invalid value for '--limit'"),
        (["no-such-command"], "No such command 'no-such-command'"),
    ],
)
def test_a_bad_option_value_is_one_line_and_exit_2_not_a_box(args, message):
    proc = run_cli(*args)
    _one_line_exit_2(proc, message)
    assert proc.stderr.startswith("error: ") and "--help" in proc.stderr  # where to read more


def test_no_arguments_still_print_the_help():
    proc = run_cli()
    assert proc.returncode == 2 and "Usage" in proc.stdout and "optimize" in proc.stdout and not proc.stderr


def test_version_prints_the_packages_version():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"agentkern {version}", proc.stdout + proc.stderr


def test_optimize_on_a_directory_says_it_is_a_directory(tmp_path):
    _one_line_exit_2(run_cli("optimize", str(tmp_path), "--target", "cpu"), "is a directory, not a problem file")


def test_optimize_on_a_damaged_run_store_is_one_line_and_exit_2_as_traces_says(tmp_path):
    (tmp_path / "runs.db").write_bytes(b"not a database, " * 512)
    optimize = run_cli("optimize", "softmax", "--target", "cpu", AGENTKERN_HOME=str(tmp_path))
    listed = run_cli("traces", "list", AGENTKERN_HOME=str(tmp_path))
    _one_line_exit_2(optimize, "is not a readable run store")
    _one_line_exit_2(listed, "is not a readable run store")
    assert optimize.stderr == listed.stderr  # one message for one problem


def test_kb_build_that_finds_no_documents_fails(tmp_path):
    proc = run_cli("kb", "build", AGENTKERN_HOME=str(tmp_path / "home"), AGENTKERN_DATA=str(tmp_path / "nothing"))
    _one_line_exit_2(proc, "no documents to index")


# issue 14: a source built to exhaust the parser is a verdict (a candidate) or one line and exit 2 (a problem).
DEEP_EXPRESSION = "Y = " + "-" * 200_000 + "1\n"  # MemoryError inside CPython 3.11's parser


def test_a_deeply_nested_candidate_is_a_compile_error_verdict(tmp_path):
    path = tmp_path / "deep.py"
    path.write_text(SOFTMAX_CPP.read_text() + DEEP_EXPRESSION)
    proc = run_cli("eval", "relu", str(path), "--target", "cpu", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "compile_error" and "too deeply nested" in result["error"], result


def test_a_huge_candidate_is_a_compile_error_verdict(tmp_path):
    path = tmp_path / "huge.py"
    path.write_text(SOFTMAX_CPP.read_text() + "#" + "x" * (5 * 2**20) + "\n")
    proc = run_cli("eval", "relu", str(path), "--target", "cpu", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "compile_error" and "source too large" in result["error"], result


def test_a_deeply_nested_problem_is_one_line_and_exit_2(tmp_path, honest_solution):
    problem = tmp_path / "deep_problem.py"
    problem.write_text((ROOT / "kernels_dataset/problems/softmax.py").read_text() + DEEP_EXPRESSION)
    _one_line_exit_2(run_cli("eval", str(problem), str(honest_solution), "--target", "cpu"), "too deeply nested")


def test_figures_cached_while_the_host_was_busy_do_not_reject_an_honest_kernel(tmp_path, honest_solution, monkeypatch):
    """The field bug: a bandwidth measured once while the machine was busy, cached, made an honest kernel beat
    the roofline. Now the host is measured again before a verdict says so, and the cache keeps the faster."""
    from agentkern.targets import host

    home = tmp_path / "home"
    monkeypatch.setenv("AGENTKERN_HOME", str(home))
    cache = host._cache_path(host._cpu_facts())
    slow = {
        "dram_gbs": 0.001,
        "cache_gbs": 0.001,
        "matmul_tflops": 1e-6,
        "fma_tflops": 1e-6,
        "trials": 12,
        "cache_copy_kib": 64,
    }
    cache.write_text(json.dumps(slow))
    proc = run_cli("eval", "softmax", str(honest_solution), "--target", "cpu", "--json", AGENTKERN_HOME=str(home))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "ok" and result["correct"] is True, result["error"]
    check = result["details"]["roofline_check"]
    assert check["remeasured"]["before"]["dram_gbs"] == 0.001 and check["remeasured"]["after"]["dram_gbs"] > 0.001
    assert check["bound_ms"] < check["first_bound_ms"] and result["kernel_ms"] >= check["limit_ms"]
    assert check["outcome"].startswith("within the bound")
    assert json.loads(cache.read_text())["dram_gbs"] == check["remeasured"]["after"]["dram_gbs"] > 0.001


def test_an_unknown_cpu_isa_level_is_one_line_and_exit_2(honest_solution):
    proc = run_cli("eval", "softmax", str(honest_solution), "--target", "cpu", AGENTKERN_CPU_ISA="avx10")
    _one_line_exit_2(proc, "AGENTKERN_CPU_ISA='avx10': expected one of avx2, avx512, native")


def test_a_verdict_under_a_cpu_isa_level_holds_torch_to_it(honest_solution):
    from agentkern import cpu_isa

    if not cpu_isa.LEVELS["avx2"].needs <= cpu_isa.cpu_flags():
        pytest.skip("this CPU cannot run x86-64-v3")
    proc = run_cli("eval", "softmax", str(honest_solution), "--target", "cpu", "--json", AGENTKERN_CPU_ISA="avx2")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "ok" and result["correct"] is True, result["error"]
    # the reference's torch ran at the level, not at this CPU's own (which may be AVX512)
    assert (result["details"]["cpu_isa"], result["details"]["torch_cpu_capability"]) == ("avx2", "AVX2")
