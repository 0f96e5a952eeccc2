"""`agentkern traces export`: the best kernel as a module whose own tests pass in a fresh process (and fail
for a wrong kernel), KernelBench's layout, and JSON lines with rewards for a trainer."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from traces_runs import STATIC_LINE, agentkern, builtin_run, scripted_run

from agentkern.traces.jsonl import FAILURE_REWARD
from agentkern.traces.store import RunStore


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    return scripted_run(tmp_path_factory)


def export(run, fmt, out):
    proc = agentkern("traces", "export", run.run_id, "--format", fmt, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return [Path(line) for line in proc.stdout.splitlines()]


def pytest_in(folder):
    """The exported tests in a fresh interpreter, from inside the folder, as a user would run them."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_module_export_passes_its_own_tests_in_a_fresh_process(scripted, tmp_path):
    out = tmp_path / "module"
    written = export(scripted, "module", out)
    assert sorted(p.name for p in written) == [
        "README.md",
        "relu_kernel.py",
        "relu_reference.py",
        "test_relu_kernel.py",
    ]
    module = (out / "relu_kernel.py").read_text()
    assert module.startswith(scripted.best_source())  # the best kernel, verbatim
    assert "class ModelNew" in module and "\ndef relu(x):" in module and "\ndef register_custom_op(" in module
    assert (out / "relu_reference.py").read_text() == Path(scripted.result["problem"]).read_text()
    proc = pytest_in(out)
    assert proc.returncode == 0 and "5 passed" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-2000:]

    # The exported tests can fail: the same export with a kernel that halves negative inputs.
    broken = tmp_path / "broken"
    shutil.copytree(out, broken)
    kernel = broken / "relu_kernel.py"
    kernel.write_text(kernel.read_text().replace("? x[i] : 0.f;", "? x[i] : 0.5f * x[i];"))
    failed = pytest_in(broken)
    assert failed.returncode == 1 and "5 failed" in failed.stdout, failed.stdout[-3000:]


def test_the_kernelbench_export_follows_kernelbenchs_layout(scripted, tmp_path):
    out = tmp_path / "kb"
    export(scripted, "kernelbench", out)
    problem = out / "KernelBench" / "level1" / "1_relu.py"
    assert problem.read_text() == Path(scripted.result["problem"]).read_text()
    run_dir = out / "runs" / scripted.run_id
    samples = sorted(run_dir.glob("level_1_problem_1_sample_*_kernel.py"))
    assert len(samples) == 4  # the candidates with code: 001-0, 001-1, 002-0, 002-1 (the no_code ones have none)
    assert (
        run_dir / "level_1_problem_1_sample_0_kernel.py"
    ).read_text() == scripted.best_source()  # sample 0: the best
    results = json.loads((run_dir / "eval_results.json").read_text())["1"]
    by_candidate = {r["metadata"]["agentkern_candidate"]: r for r in results}
    assert [r["sample_id"] for r in results] == [0, 1, 2, 3]
    best = by_candidate[scripted.result["best"]["candidate"]]
    assert best["compiled"] and best["correctness"] and best["runtime"] > 0 and best["runtime_stats"]["num_trials"] >= 3
    assert by_candidate["001-1"]["compiled"] is False and by_candidate["001-1"]["runtime"] == -1.0
    assert by_candidate["002-1"]["compiled"] is True and by_candidate["002-1"]["correctness"] is False
    assert "eval_from_generations.py" in (out / "README.md").read_text()


def _records(run, tmp_path):
    [path] = export(run, "jsonl", tmp_path / "jsonl")
    assert path.name == f"{run.run_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_jsonl_export_has_a_record_per_answered_model_call_with_a_reward(scripted, tmp_path):
    records = _records(scripted, tmp_path)
    # 2 planner and 6 coder calls; the last coder call failed (no completion) and is left out.
    assert [(r["agent"], r["candidate_id"]) for r in records] == [
        ("planner", None),
        ("coder", "001-0"),
        ("coder", "001-1"),
        ("coder", "001-2"),
        ("planner", None),
        ("coder", "002-0"),
        ("coder", "002-1"),
    ]
    rewards = {r["candidate_id"]: r for r in records if r["candidate_id"]}
    speedups = {c: rewards[c]["speedup"] for c in ("001-0", "002-0")}
    for cand, speedup in speedups.items():
        assert rewards[cand]["reward"] == pytest.approx(speedup) and rewards[cand]["reward_kind"] == "measured_speedup"
    for cand in ("001-1", "001-2", "002-1"):
        assert rewards[cand]["reward"] == FAILURE_REWARD and rewards[cand]["reward_kind"] == "failure"
    planners = [r for r in records if r["agent"] == "planner"]
    assert [p["reward"] for p in planners] == pytest.approx([speedups["001-0"], speedups["002-0"]])
    coder = rewards["002-0"]
    assert "You are the coder" in coder["prompt"] and STATIC_LINE in coder["completion"]
    assert coder["messages"] == [
        {"role": "user", "content": coder["prompt"]},
        {"role": "assistant", "content": coder["completion"]},
    ]
    assert coder["origin"] == "model_call" and coder["prompt_tokens"] == 1000


def test_the_jsonl_export_of_a_builtin_run_has_a_record_per_candidate(tmp_path_factory, tmp_path):
    run = builtin_run(tmp_path_factory)
    records = _records(run, tmp_path)
    assert len(records) == 6 and {r["origin"] for r in records} == {"builtin_candidate"}
    assert all("torch.relu(x)" in r["prompt"] and "Plan (iteration" in r["prompt"] for r in records)
    assert all("class ModelNew" in r["completion"] for r in records)
    assert [r["reward"] for r in records].count(FAILURE_REWARD) == 1  # the fake evaluator failed the third
    assert max(r["reward"] for r in records) == pytest.approx(run.result["best"]["speedup"])


def test_exporting_a_run_without_a_correct_kernel_is_one_line_and_exit_code_2(tmp_path):
    db = tmp_path / "runs.db"
    store = RunStore(db)
    store.start_run("failed-run", "relu.py", "cpu", "cpp", "scripted", {})
    store.candidate("failed-run", {"id": "001-0", "iteration": 1, "strategy": "s/0", "status": "incorrect"})
    store.close()
    proc = agentkern(
        "traces", "export", "failed-run", "--format", "module", "--out", str(tmp_path / "x"), "--db", str(db)
    )
    assert proc.returncode == 2 and proc.stderr.startswith("error:") and "no correct candidate" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_exported_files_get_the_mode_any_new_file_gets_not_a_private_one(scripted, tmp_path):
    from agentkern.helpers import atomic_write_text

    old = os.umask(0o022)
    try:
        export(scripted, "kernelbench", tmp_path / "kb")
        export(scripted, "module", tmp_path / "module")
        atomic_write_text(tmp_path / "shared.txt", "x")
        os.umask(0o077)  # and a stricter umask is respected, as open() respects it
        atomic_write_text(tmp_path / "private.txt", "x")
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "kb").rglob("*") if p.is_file()] + list((tmp_path / "module").iterdir())
    assert len(files) > 5 and {oct(p.stat().st_mode & 0o777) for p in files} == {oct(0o644)}
    assert oct((tmp_path / "shared.txt").stat().st_mode & 0o777) == oct(0o644)
    assert oct((tmp_path / "private.txt").stat().st_mode & 0o777) == oct(0o600)
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind
