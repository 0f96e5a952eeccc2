"""`agentkern bench`: the metric definitions on hand-made results, report comparison for CI, problem sizes,
and one small suite run end to end through the command line."""

import json
import math
import os
import subprocess
import sys

import pytest
from conftest import ROOT, fast_options

from agentkern.bench import compare as C
from agentkern.bench import metrics as M
from agentkern.bench.runner import BenchOptions, classify
from agentkern.bench.summary import ROW_KEYS, build_report, markdown
from agentkern.errors import UserError


def row(name, status="ok", eager=None, compile_=None, n=0, c=0, speedups=(), factor=None, predicted=False):
    return {
        "name": name,
        "status": status,
        "reason": None if status == "ok" else "why",
        "speedup_eager": eager,
        "speedup_compile": compile_,
        "roofline_fraction": None,
        "kernel_path": None,
        "candidates": n,
        "correct_candidates": c,
        "candidate_speedups": list(speedups),
        "run_id": None,
        "compile_factor": factor,
        "predicted": predicted,
    }


# ---- fast_p ------------------------------------------------------------------------------------------------
def test_fast_p_counts_correct_and_strictly_faster_over_all_problems():
    speedups = [2.5, 1.5, 1.0, 0.5, None, None]  # a tie at 1.0 and at 1.5; two failures
    assert M.fast_p(speedups, 0) == pytest.approx(4 / 6)
    assert M.fast_p(speedups, 1.0) == pytest.approx(2 / 6)  # 1.0 is not faster than 1
    assert M.fast_p(speedups, 1.5) == pytest.approx(1 / 6)  # 1.5 is not faster than 1.5
    assert M.fast_p(speedups, 2.0) == pytest.approx(1 / 6)


def test_fast_p_of_an_empty_suite_is_null_and_of_all_failed_is_zero():
    assert M.fast_p([], 1.0) is None
    assert M.fast_p([None, None], 0) == 0.0


def test_a_correct_problem_without_timing_counts_for_fast_0_only():
    assert M.fast_p([True, None], 0) == 0.5
    assert M.fast_p([True, None], 1.0) == 0.0
    assert M.geomean([True, 4.0]) == 4.0


# ---- pass@k ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,c,k", [(5, 2, 1), (5, 2, 2), (10, 3, 4), (8, 8, 3), (8, 1, 8), (20, 5, 10)])
def test_pass_at_k_is_the_unbiased_estimator(n, c, k):
    expected = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert M.pass_at_k_one(n, c, k) == pytest.approx(expected)


def test_pass_at_k_edge_cases():
    assert M.pass_at_k_one(5, 2, 1) == pytest.approx(0.4)
    assert M.pass_at_k_one(2, 1, 5) == 1.0  # k > n: pass@n, a correct candidate among all of them
    assert M.pass_at_k_one(2, 0, 5) == 0.0
    assert M.pass_at_k_one(0, 0, 1) == 0.0  # a problem that never produced a candidate
    assert M.pass_at_k([(4, 0), (4, 0)], 1) == 0.0  # all failed
    assert M.pass_at_k([], 1) is None
    assert M.pass_at_k([(4, 4), (4, 0)], 1) == 0.5
    with pytest.raises(ValueError):
        M.pass_at_k_one(2, 3, 1)


# ---- speedup@k and geomean ---------------------------------------------------------------------------------
def test_speedup_at_k_is_the_mean_of_each_problems_best_among_its_first_k():
    problems = [[None, 1.5, 2.0], [0.8], []]  # the third problem failed before any candidate
    assert M.speedup_at_k(problems, 1) == pytest.approx((0 + 0.8 + 0) / 3)
    assert M.speedup_at_k(problems, 2) == pytest.approx((1.5 + 0.8) / 3)
    assert M.speedup_at_k(problems, 10) == pytest.approx((2.0 + 0.8) / 3)  # k larger than n: all of them
    assert M.speedup_at_k([], 1) is None
    assert M.speedup_at_k([[2.0, 2.0]], 2) == 2.0  # ties


def test_geomean_over_correct_problems_and_null_when_none():
    assert M.geomean([2.0, 0.5, None]) == pytest.approx(1.0)
    assert M.geomean([None, None]) is None
    assert M.geomean([]) is None


def test_suite_metrics_keys_and_the_compile_baseline():
    rows = [
        row("a", eager=2.0, factor=0.5, n=2, c=2, speedups=[1.0, 2.0]),
        row("b", "failed", n=2, c=0, speedups=[None, None]),
        row("c", "unsupported"),
    ]
    m = M.suite_metrics(rows, k=2)
    assert set(M.FAST_P) | {"pass_at_k", "speedup_at_k", "geomean_speedup"} <= set(m)
    assert m["fast_0"] == pytest.approx(1 / 3) and m["fast_1_5"] == pytest.approx(1 / 3)
    assert m["pass_at_k"] == pytest.approx(1 / 3) and m["speedup_at_k"] == pytest.approx(2 / 3)
    rows[0]["speedup_compile"] = 1.0  # 2.0 x (compile_ms / eager_ms = 0.5)
    mc = M.suite_metrics(rows, k=2, baseline="compile")
    assert mc["fast_1"] == 0.0 and mc["fast_0"] == pytest.approx(1 / 3)
    assert mc["speedup_at_k"] == pytest.approx(1.0 / 3) and mc["geomean_speedup"] == 1.0
    empty = M.suite_metrics([], k=1)
    assert all(
        empty[key] is None
        for key in ("fast_0", "fast_1", "fast_1_5", "fast_2", "pass_at_k", "speedup_at_k", "geomean_speedup")
    )


# ---- report and compare ------------------------------------------------------------------------------------
def test_report_json_has_the_stable_keys_and_a_markdown_table():
    report = build_report(
        "mine", "cpu", BenchOptions(target="cpu"), [row("a", eager=1.2, n=1, c=1, speedups=[1.2]), row("b", "error")]
    )
    assert {"suite", "target", "options", "metrics", "problems"} <= set(report)
    assert set(ROW_KEYS) <= set(report["problems"][0])
    assert {"fast_0", "fast_1", "fast_1_5", "fast_2", "pass_at_k", "speedup_at_k", "geomean_speedup"} <= set(
        report["metrics"]
    )
    text = markdown(report)
    assert "| a | ok | 1.20x |" in text and "| b | error |" in text and "fast_1.5" in text
    json.dumps(report)


def _report(*rows_, baseline="eager"):
    return {"options": {"baseline": baseline}, "metrics": {}, "problems": list(rows_)}


def test_compare_flags_regressions_and_not_improvements():
    before = _report(
        row("a", eager=2.0), row("b", eager=1.0), row("c", eager=1.5), row("d", "failed"), row("gone", eager=1.0)
    )
    after = _report(
        row("a", eager=1.5), row("b", eager=1.3), row("c", "error"), row("d", eager=1.1), row("new", eager=3.0)
    )
    result = C.compare(before, after, threshold=0.10)
    kinds = {ch["name"]: ch["kind"] for ch in result["changes"]}
    assert kinds == {"a": "slower", "b": "improved", "c": "broke", "d": "fixed", "new": "new", "gone": "missing"}
    assert result["regressed"]
    lines = C.summary_lines(result)
    assert lines[0].startswith("c: BROKE") and "regression(s)" in lines[-1]


def test_compare_within_the_threshold_or_only_improved_passes():
    before = _report(row("a", eager=2.0), row("b", "failed"))
    assert not C.compare(before, _report(row("a", eager=1.85), row("b", "failed")), 0.10)["regressed"]  # -7.5%
    assert not C.compare(before, _report(row("a", eager=3.0), row("b", eager=1.0)), 0.10)["regressed"]
    assert C.compare(before, _report(row("a", eager=1.85), row("b", "failed")), 0.05)["regressed"]


def test_load_report_rejects_bad_files(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        C.load_report(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UserError, match="cannot read"):
        C.load_report(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(UserError, match="not an agentkern bench report"):
        C.load_report(bad)


def test_failures_are_classified_by_their_cause():
    assert classify("the built-in model does not recognise this problem (sort ...)") == "unsupported"
    assert classify("cannot analyse x.py: compilation/import took longer than 120 s") == "timeout"
    assert classify("/x.py is not a KernelBench problem: it lacks Model") == "error"


def run_cli(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "agentkern", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ},
    )


def test_bench_compare_command_exit_codes(tmp_path):
    old, new, better = tmp_path / "old.json", tmp_path / "new.json", tmp_path / "better.json"
    old.write_text(json.dumps(_report(row("a", eager=2.0))))
    new.write_text(json.dumps(_report(row("a", eager=1.0))))
    better.write_text(json.dumps(_report(row("a", eager=2.5))))
    slower = run_cli("bench", "compare", str(old), str(new))
    assert slower.returncode == 1 and "a: SLOWER 2.00x -> 1.00x (-50%)" in slower.stdout
    assert run_cli("bench", "compare", str(old), str(better)).returncode == 0
    missing = run_cli("bench", "compare", str(old), str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1


def test_unknown_suite_is_one_line_and_exit_2():
    proc = run_cli("bench", "no_such_suite", "--target", "cpu")
    assert proc.returncode == 2 and "unknown suite 'no_such_suite'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_suites_resolve_folders_and_kernelbench_checkouts(tmp_path):
    from agentkern.bench.suites import resolve_suite

    assert len(resolve_suite("kernels_dataset").problems) >= 5
    for level in ("level1", "level2"):
        (tmp_path / "KernelBench" / level).mkdir(parents=True)
        for i in (2, 10, 1):
            (tmp_path / "KernelBench" / level / f"{i}_Op.py").write_text("")
    names = [p.name for p in resolve_suite(str(tmp_path)).problems]
    assert names[:3] == ["level1/1_Op", "level1/2_Op", "level1/10_Op"] and len(names) == 6
    assert len(resolve_suite(str(tmp_path), limit=2).problems) == 2
    assert [p.name for p in resolve_suite(str(tmp_path), only=["level2/10_Op"]).problems] == ["level2/10_Op"]
    with pytest.raises(UserError, match="--only: no problem 'nope'"):
        resolve_suite(str(tmp_path), only=["nope"])


# ---- problem sizes -----------------------------------------------------------------------------------------
SIZED_PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


rows, cols = 3, 5
SIZES = {"cpu": {"rows": 8, "cols": 16}, "gpu": {"rows": 64, "cols": 128}}


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
"""

SHAPE_CHECKING_SOLUTION = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        if tuple(x.shape) != (8, 16):
            raise ValueError(f"got shape {tuple(x.shape)}, not the cpu size")
        return x.clamp(min=0)
"""


@pytest.fixture
def sized(tmp_path):
    problem, solution = tmp_path / "sized.py", tmp_path / "sol.py"
    problem.write_text(SIZED_PROBLEM)
    solution.write_text(SHAPE_CHECKING_SOLUTION)
    return problem, solution


def test_a_problem_with_sizes_runs_at_the_cpu_size_on_a_cpu(sized):
    from agentkern.harness import evaluate

    result = evaluate(*sized, "cpu", fast_options())
    assert result.status == "ok", result.error
    assert result.details["size"] == "cpu"
    gpu_sized = evaluate(*sized, "cpu", fast_options(size="gpu"))
    assert gpu_sized.status == "runtime_error" and "(64, 128)" in gpu_sized.error


def test_an_unknown_size_is_a_clear_error(sized):
    from agentkern.harness import evaluate

    with pytest.raises(UserError, match=r"sized.py has no size 'cpu_small' \(its SIZES declare cpu, gpu\)"):
        evaluate(*sized, "cpu", fast_options(size="cpu_small"))
    proc = run_cli("eval", str(sized[0]), str(sized[1]), "--target", "cpu", "--size", "huge")
    assert proc.returncode == 2 and "sized.py has no size 'huge' (its SIZES declare cpu, gpu)" in proc.stderr


def test_the_size_default_follows_the_target_and_an_absent_gpu_gets_cpu_sizes():
    from agentkern import sizes
    from agentkern.targets import get_target

    cpu, h100 = get_target("cpu"), get_target("h100")
    assert sizes.choose(None, cpu, True, ["cpu", "gpu"]) == ("cpu", None)
    assert sizes.choose(None, h100, True, ["cpu", "gpu"]) == ("gpu", None)
    size, note = sizes.choose(None, h100, False, ["cpu", "gpu"])
    assert size == "cpu" and "Triton interpreter" in note
    assert sizes.choose("gpu", h100, False, ["cpu", "gpu"]) == ("gpu", None)  # asked for: honoured
    assert sizes.choose(None, cpu, True, None) == (None, None)  # no SIZES: used as written


def test_the_recogniser_sees_the_sized_shapes_and_the_model_source_keeps_them(sized, tmp_path):
    from agentkern.policies.builtin.analysis import analyze_problem
    from agentkern.policies.builtin.recognize import model_source

    spec = analyze_problem(sized[0], size="cpu")
    assert spec["input_shapes"] == [[8, 16]] and spec["size"] == "cpu"
    uses_constant = tmp_path / "lin.py"
    uses_constant.write_text(
        "import torch.nn as nn\nWIDTH = 4\nclass Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(WIDTH, WIDTH)\n"
    )
    assert model_source(uses_constant, overrides={"WIDTH": 32}).rstrip().endswith("WIDTH = 32")


# ---- end to end --------------------------------------------------------------------------------------------
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
    previous.write_text(json.dumps(_report(row("relu_small", eager=1000.0), row("sort_rows", "unsupported"))))
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
    assert sort["status"] == "unsupported" and "does not recognise" in sort["reason"]
    m = report["metrics"]
    assert m["fast_0"] == 0.5 and m["problems"] == 2 and m["pass_at_k"] == 0.5
    assert report["comparison"]["regressed"] and "relu_small: SLOWER" in proc.stderr
    assert "[1/2] relu_small: ok" in proc.stderr and "[2/2] sort_rows: unsupported" in proc.stderr
