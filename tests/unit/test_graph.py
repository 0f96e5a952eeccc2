"""The agent graph end to end: stop rule, budgets, checkpoint and resume, with fakes where speed matters."""

import sqlite3

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from loop_fakes import FakeEvaluate, ListPolicy

from agentkern.loop import run as optimize
from agentkern.loop.deps import OptimizeOptions


def run_fake(tmp_path, speedups, checkpointer=None, **opts):
    options = OptimizeOptions(problem="relu", target="cpu", beam=1, **opts)
    fake = FakeEvaluate(speedups)
    result = optimize.run(
        options,
        policy=ListPolicy(),
        evaluate=fake,
        checkpointer=checkpointer or SqliteSaver(sqlite3.connect(tmp_path / "cp.db", check_same_thread=False)),
    )
    return result, fake


def test_stops_when_speedup_at_k_stalls_for_patience_iterations(tmp_path):
    # 1.0, 1.5, then nothing better: stages 2 and 3 are tried first, then patience 2 runs out.
    result, fake = run_fake(tmp_path, [1.0, 1.5, 1.2, 1.4, 1.1, 1.3, 1.0], max_iters=20, patience=2)
    assert result["best"]["speedup"] == 1.5 and result["best"]["candidate"] == "002-0"
    assert "did not improve" in result["stopped_because"]
    assert result["iterations"] == 6  # 2 gains, 2 stage widenings, 2 stale at the last stage
    assert result["speedup_history"] == [1.0, 1.5, 1.5, 1.5, 1.5, 1.5]


def test_a_small_gain_below_min_gain_is_not_progress(tmp_path):
    result, _ = run_fake(tmp_path, [1.0, 1.005, 1.009, 1.008, 1.5], max_iters=20, patience=1, min_gain=0.01)
    # Each step is under 1%: stage 2, stage 3, then patience 1 stops before 1.5 is seen.
    assert result["best"]["speedup"] == pytest.approx(1.009)
    assert result["iterations"] == 4


def test_max_iters_and_speedup_at_k(tmp_path):
    result, fake = run_fake(tmp_path, [1.0, 2.0, 3.0], max_iters=3, k=2)
    assert result["iterations"] == 3 and len(fake.calls) == 3
    assert result["stopped_because"] == "reached --max-iters 3"
    assert result["speedup_history"][-1] == 2.0  # speedup@2 ignores the third candidate
    assert result["best"]["speedup"] == 3.0  # the kernel written out is still the fastest one found


def test_no_correct_candidate_gives_best_null(tmp_path):
    result, _ = run_fake(tmp_path, [None], max_iters=2)
    assert result["best"] is None and result["candidates"] == 2 and result["correct_candidates"] == 0


def test_killed_run_resumes_without_losing_or_repeating_a_step(tmp_path):
    db = tmp_path / "cp.db"
    options = OptimizeOptions(problem="relu", target="cpu", beam=2, max_iters=3, patience=5)
    policy = ListPolicy()
    killed = FakeEvaluate([1.0, 1.2, 1.1, 1.6, 1.3, 1.4], interrupt_at=3)
    store = optimize.open_store()
    with pytest.raises(KeyboardInterrupt):
        optimize.run(
            options,
            policy=policy,
            evaluate=killed,
            checkpointer=SqliteSaver(sqlite3.connect(db, check_same_thread=False)),
        )
    run_id = store.db.execute("SELECT run_id FROM runs ORDER BY created DESC LIMIT 1").fetchone()[0]
    assert [c["candidate_id"] for c in store.candidates(run_id)] == ["001-0", "001-1"]
    # The kill came inside iteration 2's compiler, after one of its two evaluations.
    resumed = FakeEvaluate([1.6, 1.3, 1.4])
    result = optimize.run(
        OptimizeOptions(problem="relu"),
        resume=run_id,
        policy=policy,
        evaluate=resumed,
        checkpointer=SqliteSaver(sqlite3.connect(db, check_same_thread=False)),
    )
    ids = [c["candidate_id"] for c in store.candidates(run_id)]
    assert ids == ["001-0", "001-1", "002-0", "002-1", "003-0", "003-1"]
    # 002-0 was evaluated before the kill and is not evaluated again.
    assert killed.calls == ["001-0.py", "001-1.py", "002-0.py"]
    assert resumed.calls == ["002-1.py", "003-0.py", "003-1.py"]
    assert result["best"]["speedup"] == 1.6 and result["iterations"] == 3
    agents = [(s["iteration"], s["agent"], s["key"]) for s in store.steps(run_id)]
    assert len(agents) == len(set(agents))  # no step recorded twice
    for it in (1, 2, 3):
        for agent in ("planner", "coder", "critic"):
            assert (it, agent, "") in agents
    assert store.run(run_id)["status"] == "finished"


def test_a_suspicious_candidate_is_recorded_as_such_and_never_the_best(tmp_path):
    """harness/roofline_check.py: outputs matched but faster than the roofline. Not folded into incorrect,
    never the best, however large its speedup."""
    events = []
    options = OptimizeOptions(problem="relu", target="cpu", beam=1, max_iters=3, patience=5)
    result = optimize.run(
        options,
        policy=ListPolicy(),
        evaluate=FakeEvaluate([1.2, "suspicious", 1.1]),
        checkpointer=SqliteSaver(sqlite3.connect(tmp_path / "cp.db", check_same_thread=False)),
        on_event=lambda kind, data: events.append((kind, data)),
    )
    assert result["best"]["speedup"] == 1.2 and result["best"]["candidate"] == "001-0"
    assert result["correct_candidates"] == 2 and result["speedup_history"] == [1.2, 1.2, 1.2]
    store = optimize.open_store()
    try:
        stored = {c["candidate_id"]: c for c in store.candidates(result["run_id"])}
    finally:
        store.close()
    assert stored["002-0"]["status"] == "suspicious" and not stored["002-0"]["correct"]
    assert "beats the cpu roofline" in stored["002-0"]["error"]
    [profiled] = [d["candidate"] for kind, d in events if kind == "profiler" and d["candidate"]["id"] == "002-0"]
    assert profiled["status"] == "suspicious" and profiled["verdict"]["suspicious"]
