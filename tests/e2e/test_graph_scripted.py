"""The whole graph with a scripted model and the real harness: every kind of bad reply ends as a verdict,
the run ends with the right best candidate and a complete trace."""

import sqlite3

from langgraph.checkpoint.sqlite import SqliteSaver
from relu_replies import COMPILE_ERROR, GOOD, HANG, NO_CODE, SYNTAX_ERROR, WRONG
from support import fast_options
from traces_runs import optimize_with_run_id

from agentkern.loop import run as optimize
from agentkern.loop.deps import OptimizeOptions
from agentkern.models.scripted import ScriptedModel


def test_scripted_run_records_every_verdict_and_keeps_the_right_best(tmp_path):
    model = ScriptedModel(
        [
            "STRATEGY: relu-omp/basic\nA flat OpenMP loop.",
            GOOD,
            NO_CODE,
            "STRATEGY: relu-omp/retry\nFix the build.",
            SYNTAX_ERROR,
            COMPILE_ERROR,
            "STRATEGY: relu-omp/variants\nTry again.",
            WRONG,
            HANG,
        ]
    )
    store = optimize.open_store()
    run_id = optimize.new_run_id("relu")
    policy = optimize.llm_policy(model, store, run_id)
    opts = fast_options(run_timeout_s=6)

    def evaluate(problem_path, path, target_name, _options):
        from agentkern.harness.evaluate import evaluate as harness_evaluate

        return harness_evaluate(problem_path, path, target_name, opts)

    options = OptimizeOptions(problem="relu", target="cpu", beam=2, max_iters=3, patience=5, out=str(tmp_path / "out"))
    result = optimize_with_run_id(run_id, options, policy, evaluate, tmp_path)

    statuses = {c["candidate_id"]: c["status"] for c in store.candidates(run_id)}
    assert statuses == {
        "001-0": "ok",
        "001-1": "no_code",
        "002-0": "no_code",
        "002-1": "compile_error",
        "003-0": "incorrect",
        "003-1": "timeout",
    }
    best = result["best"]
    assert best["candidate"] == "001-0" and best["speedup"] > 0 and best["strategy"] == "relu-omp/basic/0"
    assert "? x[i] : 0.f;" in (tmp_path / "out" / "best_relu.py").read_text()  # the good kernel, written out
    # The trace: 9 model calls, each prompt and reply stored; the coder saw the critic's feedback.
    calls = store.model_calls(run_id)
    assert [c["agent"] for c in calls] == ["planner", "coder", "coder"] * 3
    assert all(c["prompt"] and c["reply"] for c in calls)
    second_coder_prompt = calls[4]["prompt"]
    assert "001-1" in second_coder_prompt and "no_code" in second_coder_prompt  # feedback reached the coder
    assert len(model.history) == 9
    agents = {(s["iteration"], s["agent"]) for s in store.steps(run_id)}
    for it in (1, 2, 3):
        assert {(it, a) for a in ("planner", "coder", "compiler", "profiler", "critic")} <= agents


def test_a_run_stopped_by_ctrl_c_is_recorded_as_interrupted(tmp_path):
    """Ctrl-C during an evaluation ends the command, but the run's row says what happened to it, and
    `--resume` is still possible: the candidates finished before it are kept."""
    import pytest

    model = ScriptedModel(["STRATEGY: relu-omp/basic\nA flat OpenMP loop.", GOOD, GOOD] * 2)
    store = optimize.open_store()
    calls = []

    def evaluate(problem_path, path, target_name, _options):
        from agentkern.harness.evaluate import evaluate as harness_evaluate

        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return harness_evaluate(problem_path, path, target_name, fast_options())

    options = OptimizeOptions(problem="relu", target="cpu", beam=2, max_iters=2, out=str(tmp_path / "out"))
    run_ids = []
    original = optimize.new_run_id
    optimize.new_run_id = lambda problem: run_ids.append(original(problem)) or run_ids[-1]
    try:
        with pytest.raises(KeyboardInterrupt):
            optimize.run(
                options,
                policy=optimize.llm_policy(model, store, "unused"),
                evaluate=evaluate,
                checkpointer=SqliteSaver(sqlite3.connect(tmp_path / "cp.db", check_same_thread=False)),
            )
    finally:
        optimize.new_run_id = original
    run = store.run(run_ids[0])
    assert run["status"] == "interrupted" and run["stopped_because"] == "interrupted (Ctrl-C)"
    assert [c["status"] for c in store.candidates(run_ids[0])] == ["ok", "ok"]
