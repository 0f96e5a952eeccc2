"""`agentkern bench`: the metric definitions on hand-made results, report comparison for CI, suites, the
default problem size. (A suite run: tests/e2e/test_bench_cli.py; sizes in the harness:
tests/harness/test_problem_sizes.py.)"""

import json
import math

import pytest
from bench_inputs import bench_report, row
from support import run_cli

from agentkern.bench import compare as C
from agentkern.bench import metrics as M
from agentkern.bench.runner import BenchOptions, classify
from agentkern.bench.summary import ROW_KEYS, build_report, markdown
from agentkern.errors import UserError


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


def test_compare_flags_regressions_and_not_improvements():
    before = bench_report(
        row("a", eager=2.0), row("b", eager=1.0), row("c", eager=1.5), row("d", "failed"), row("gone", eager=1.0)
    )
    after = bench_report(
        row("a", eager=1.5), row("b", eager=1.3), row("c", "error"), row("d", eager=1.1), row("new", eager=3.0)
    )
    result = C.compare(before, after, threshold=0.10)
    kinds = {ch["name"]: ch["kind"] for ch in result["changes"]}
    assert kinds == {"a": "slower", "b": "improved", "c": "broke", "d": "fixed", "new": "new", "gone": "missing"}
    assert result["regressed"]
    lines = C.summary_lines(result)
    assert lines[0].startswith("c: BROKE") and "regression(s)" in lines[-1]


def test_compare_within_the_threshold_or_only_improved_passes():
    before = bench_report(row("a", eager=2.0), row("b", "failed"))
    assert not C.compare(before, bench_report(row("a", eager=1.85), row("b", "failed")), 0.10)["regressed"]  # -7.5%
    assert not C.compare(before, bench_report(row("a", eager=3.0), row("b", eager=1.0)), 0.10)["regressed"]
    assert C.compare(before, bench_report(row("a", eager=1.85), row("b", "failed")), 0.05)["regressed"]


def test_a_report_names_its_machine_and_compare_says_when_it_changed():
    zen4 = "AMD EPYC (AVX-512), 2 cores, L2 1024 KiB/core, L3 32 MiB"
    report = build_report("mine", "cpu", BenchOptions(target="cpu"), [row("a", eager=1.2)], measured_on=zen4)
    assert report["measured_on"] == zen4 and f"Measured on {zen4}." in markdown(report)
    assert "Measured on" not in markdown(build_report("mine", "h100", BenchOptions(target="h100"), [row("a")]))
    before, after = bench_report(row("a", eager=2.0)), bench_report(row("a", eager=2.0))
    assert C.compare(before, after)["other_machine"] is None  # reports from before the key: nothing to say
    before["measured_on"], after["measured_on"] = zen4, zen4
    assert C.compare(before, after)["other_machine"] is None
    after["measured_on"] = "Intel Xeon (AVX-512), 2 cores, L2 2048 KiB/core, L3 105 MiB"
    result = C.compare(before, after)
    assert result["other_machine"] == {"before": zen4, "after": after["measured_on"]} and not result["regressed"]
    assert any(
        line.startswith("note: measured on another machine: before AMD EPYC") for line in C.summary_lines(result)
    )


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


def test_bench_compare_command_exit_codes(tmp_path):
    old, new, better = tmp_path / "old.json", tmp_path / "new.json", tmp_path / "better.json"
    old.write_text(json.dumps(bench_report(row("a", eager=2.0))))
    new.write_text(json.dumps(bench_report(row("a", eager=1.0))))
    better.write_text(json.dumps(bench_report(row("a", eager=2.5))))
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


def test_a_suspicious_candidate_counts_as_neither_correct_nor_fast(monkeypatch):
    """A kernel faster than the roofline (harness/roofline_check.py) is shown in the row, named apart from
    `failed`, and no metric counts its speedup."""
    from agentkern.bench import runner
    from agentkern.loop import run as loop_run

    def cand(status, speedup):
        return {"status": status, "correct": status == "ok", "speedup": speedup, "error": f"{status}: why"}

    class Store:
        def __init__(self, candidates):
            self.rows = candidates

        def candidates(self, run_id):
            return self.rows

        def close(self):
            pass

    def fill(candidates, best=None):
        monkeypatch.setattr(loop_run, "open_store", lambda: Store(candidates))
        r = runner.empty_row(type("Ref", (), {"name": "p", "path": "p.py"})())
        runner._fill(r, {"run_id": "x", "best": best, "stopped_because": "done"})
        return r

    only = fill([cand("incorrect", None), cand("suspicious", 50.0)])
    assert only["status"] == "suspicious" and only["suspicious_candidates"] == 1
    assert "1 beat the roofline" in only["reason"] and only["candidate_speedups"] == [None, None]
    best = {"speedup": 1.2, "path": "k.py", "roofline_fraction": 0.5, "predicted": False}
    mixed = fill([cand("suspicious", 50.0), cand("ok", 1.2)], best=best)
    assert mixed["status"] == "ok" and mixed["speedup_eager"] == 1.2 and mixed["candidate_speedups"] == [None, 1.2]

    m = M.suite_metrics([only, mixed], k=1)
    assert m["fast_0"] == 0.5 and m["fast_2"] == 0.0 and m["solved"] == 1
    assert m["speedup_at_k"] == 0.0  # the first candidate of each: neither correct
    assert m["pass_at_k"] == pytest.approx((0 + 0.5) / 2)  # c = 0 of 2, and 1 of 2: the suspicious one is not
    assert M.suite_metrics([only, mixed], k=2)["speedup_at_k"] == pytest.approx(0.6)
    text = markdown(build_report("mine", "cpu", BenchOptions(target="cpu"), [only, mixed]))
    assert "| p | suspicious |" in text and "0 / 2 (1 suspicious)" in text and "1 / 2 (1 suspicious)" in text


def test_a_run_whose_contenders_all_failed_when_timed_again_is_a_failed_row_that_says_so(monkeypatch):
    from agentkern.bench import runner
    from agentkern.loop import run as loop_run

    class Store:
        def candidates(self, run_id):
            return [{"status": "ok", "correct": True, "speedup": 1.4, "error": None}]

        def close(self):
            pass

    monkeypatch.setattr(loop_run, "open_store", Store)
    row = runner.empty_row(type("Ref", (), {"name": "p", "path": "p.py"})())
    rows = [{"candidate": "001-0", "search_speedup": 1.4, "status": "incorrect", "speedup": None, "error": "differs"}]
    confirmation = {"budget_s": 2.0, "rows": rows, "winner": None}
    runner._fill(row, {"run_id": "x", "best": None, "stopped_because": "done", "confirmation": confirmation})
    assert row["status"] == "failed" and row["speedup_eager"] is None
    assert "no candidate held up when timed again" in row["reason"] and "001-0 1.40x -> incorrect" in row["reason"]
