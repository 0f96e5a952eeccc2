"""The search's best candidates timed again before one is called the winner (loop/nodes/confirm.py)."""

import sqlite3

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from loop_fakes import FakeEvaluate, ListPolicy

from agentkern.loop import run as optimize
from agentkern.loop.deps import OptimizeOptions
from agentkern.loop.nodes.confirm import contenders


def run_fake(tmp_path, speedups, retimed=None, **opts):
    options = OptimizeOptions(problem="relu", target="cpu", beam=1, **opts)
    fake = FakeEvaluate(speedups, retimed=retimed)
    result = optimize.run(
        options,
        policy=ListPolicy(),
        evaluate=fake,
        checkpointer=SqliteSaver(sqlite3.connect(tmp_path / "cp.db", check_same_thread=False)),
    )
    return result, fake


def test_the_winner_is_reported_with_its_figures_as_timed_again(tmp_path):
    result, fake = run_fake(tmp_path, [1.0, 1.5, 1.2], retimed={"002-0.py": 1.1, "003-0.py": 1.05}, max_iters=3)
    # 1.2 and 1.0 are more than 15% behind 1.5: only the runner-up (1.2) is timed again beside it
    assert fake.confirmations == ["002-0.py", "003-0.py"]
    best = result["best"]
    assert best["candidate"] == "002-0"
    assert best["speedup"] == pytest.approx(1.1) and best["search_speedup"] == pytest.approx(1.5)
    assert best["kernel_ms"] == pytest.approx(1 / 1.1)
    assert result["confirmation"]["winner"] == "002-0" and result["confirmation"]["budget_s"] == 2.0
    assert result["params_won"]["speedup"] == pytest.approx(1.1)


def test_a_runner_up_the_search_could_not_tell_apart_wins_when_it_is_faster_timed_again(tmp_path):
    # 1.40 and 1.32 are within 15%: both timed again; the second holds up better.
    result, fake = run_fake(tmp_path, [1.40, 1.32, 1.0], retimed={"001-0.py": 1.02, "002-0.py": 1.25}, max_iters=3)
    assert sorted(fake.confirmations) == ["001-0.py", "002-0.py"]
    assert result["best"]["candidate"] == "002-0" and result["best"]["speedup"] == pytest.approx(1.25)
    rows = {r["candidate"]: r for r in result["confirmation"]["rows"]}
    assert rows["001-0"]["search_speedup"] == pytest.approx(1.40) and rows["001-0"]["speedup"] == pytest.approx(1.02)


def test_a_lone_best_that_collapses_when_timed_again_falls_back_on_the_runner_up(tmp_path):
    result, fake = run_fake(tmp_path, [1.42, 1.06, 0.9], retimed={"001-0.py": 0.82, "002-0.py": 1.04}, max_iters=3)
    assert fake.confirmations == ["001-0.py", "002-0.py"]
    assert result["best"]["candidate"] == "002-0" and result["best"]["speedup"] == pytest.approx(1.04)


def test_a_winner_that_fails_when_timed_again_is_not_the_winner(tmp_path):
    result, _ = run_fake(tmp_path, [1.40, 1.35, 1.0], retimed={"001-0.py": None}, max_iters=3)
    assert result["best"]["candidate"] == "002-0"
    failed = next(r for r in result["confirmation"]["rows"] if r["candidate"] == "001-0")
    assert failed["status"] == "incorrect" and failed["speedup"] is None and failed["error"]


def test_no_winner_when_no_contender_holds_up(tmp_path):
    result, _ = run_fake(tmp_path, [1.5, 1.0], retimed={"001-0.py": None, "002-0.py": None}, max_iters=2)
    assert result["best"] is None and result["confirmation"]["winner"] is None


def test_a_zero_budget_reports_the_search_figures(tmp_path):
    result, fake = run_fake(tmp_path, [1.0, 1.5], retimed={"002-0.py": 0.9}, max_iters=2, confirm_budget_s=0)
    assert fake.confirmations == [] and result["confirmation"] is None
    assert result["best"]["speedup"] == pytest.approx(1.5) == result["best"]["search_speedup"]


def test_contenders_are_the_best_and_those_within_the_margin_at_most_three():
    def c(i, s, status="ok", correct=True):
        return {"id": i, "speedup": s, "status": status, "correct": correct}

    pool = [c("a", 1.0), c("b", 2.0), c("c", 1.9), c("d", 1.8), c("e", 1.75), c("f", 3.0, "suspicious", False)]
    assert [x["id"] for x in contenders(pool)] == ["b", "c", "d"]
    assert contenders([c("x", 1.0, "incorrect", False)]) == []


def test_a_best_alone_past_the_margin_is_timed_again_with_the_runner_up():
    def c(i, s, status="ok", correct=True):
        return {"id": i, "speedup": s, "status": status, "correct": correct}

    pool = [c("lucky", 1.42), c("next", 1.06), c("third", 1.02), c("wrong", 1.3, "ok", False)]
    assert [x["id"] for x in contenders(pool)] == ["lucky", "next"]
    assert [x["id"] for x in contenders([c("only", 1.2)])] == ["only"]


def test_the_best_of_each_other_family_not_far_behind_is_timed_again():
    def c(i, s, strategy):
        return {"id": i, "speedup": s, "status": "ok", "correct": True, "strategy": strategy}

    fma = "matmul:fma,pack_a=True/"
    pool = [
        c("fma_best", 0.97, fma + "b_block=l2"),
        c("fma_next", 0.96, fma + "mc=144"),
        c("fma_third", 0.84, fma + "b_block=strips"),
        c("tiles", 0.66, "matmul:amx/amx=1"),  # one timing of the tiles' kernel: 32% behind
        c("unpacked", 0.60, "matmul:fma,pack_a=False/"),
        c("unpacked_next", 0.59, "matmul:fma,pack_a=False/kc=256"),  # not its family's best
        c("far", 0.40, "matmul:fma,pack_a=True,other/"),  # under half the best: not timed again
    ]
    assert [x["id"] for x in contenders(pool)] == ["fma_best", "fma_next", "fma_third", "tiles", "unpacked"]
    # at most two families more
    pool.insert(4, c("third_family", 0.62, "matmul:x/"))
    assert [x["id"] for x in contenders(pool)][3:] == ["tiles", "third_family"]
