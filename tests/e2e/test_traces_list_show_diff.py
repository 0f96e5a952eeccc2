"""`agentkern traces list / show / diff` on two real runs (tests/traces_runs.py): what the store keeps of
each candidate, what each view shows, that piped output is plain and a terminal gets a pager, and that bad
input is one line and exit code 2."""

import json
import os
import pty
import sqlite3
import subprocess
import sys

import pytest
from traces_runs import STATIC_LINE, agentkern, builtin_run, scripted_run

from agentkern.traces.store import RunStore


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    return scripted_run(tmp_path_factory)


@pytest.fixture(scope="module")
def builtin(tmp_path_factory):
    return builtin_run(tmp_path_factory)


def test_candidates_carry_their_code_compiler_output_correctness_and_timing(scripted):
    store = RunStore(scripted.db)
    cands = {c["candidate_id"]: c for c in store.candidates(scripted.run_id)}
    assert {k: c["status"] for k, c in cands.items()} == {
        "001-0": "ok",
        "001-1": "compile_error",
        "001-2": "no_code",
        "002-0": "ok",
        "002-1": "incorrect",
        "002-2": "no_code",
    }
    assert STATIC_LINE in cands["002-0"]["source"]
    assert "undeclared_name" in cands["001-1"]["compile_log"]
    wrong = json.loads(cands["002-1"]["correctness"])
    assert wrong["correct"] is False and "trial" in wrong["failed_trial"]
    good = json.loads(cands["001-0"]["correctness"])
    assert good["trials"] == 9 and good["max_abs_diff"] == 0.0
    timing = json.loads(cands["001-0"]["timing"])
    assert timing["timing"]["kernel"]["calls"] >= 3 and timing["kernel_ms"] > 0


# ---- list / show / diff ---------------------------------------------------------------------------------


def test_list_shows_the_runs_as_json_and_as_a_table(scripted, builtin):
    listed = agentkern("traces", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["run_id"]: r for r in json.loads(listed.stdout)}
    row = rows[scripted.run_id]
    assert (row["iterations"], row["candidates"], row["correct_candidates"]) == (2, 6, 2)
    assert row["status"] == "finished" and row["best_speedup"] == pytest.approx(scripted.result["best"]["speedup"])
    assert rows[builtin.run_id]["model"] == "builtin"
    table = agentkern("traces", "list")
    assert scripted.run_id in table.stdout and "2/6" in table.stdout


def test_show_is_a_tree_of_iterations_with_prompts_replies_diffs_logs_correctness_and_timing(scripted):
    shown = agentkern("traces", "show", scripted.run_id)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "\x1b[" not in text  # piped: plain text, no colour codes, no pager
    assert "iteration 1" in text and "iteration 2" in text
    assert "#1 planner" in text and "STRATEGY: relu-omp/basic" in text  # the planner's reply
    assert "model call 1 -> candidate 001-0" in text and "Here is the kernel." in text  # a coder's reply
    assert "scripted: the provider is down" in text  # the failed call
    assert "diff against its parent 001-0" in text  # the kernel the coder was shown and refined
    assert "-    #pragma omp parallel for\n" in text and f"+    {STATIC_LINE}\n" in text  # the one changed line
    assert "undeclared_name" in text  # compiler output of 001-1
    assert "failed at trial" in text  # correctness report of 002-1
    assert "kernel    median" in text and "reference median" in text  # timing of the good kernels
    assert f"more lines (agentkern traces show {scripted.run_id} --step" in text  # long prompts are shortened


def test_show_step_prints_one_step_in_full(scripted):
    tree = agentkern("traces", "show", scripted.run_id).stdout
    number = next(line.split("#")[1].split()[0] for line in tree.splitlines() if "compiler  001-1" in line)
    step = agentkern("traces", "show", scripted.run_id, "--step", number)
    assert step.returncode == 0, step.stderr
    assert "compiler  001-1: compile_error" in step.stdout and "undeclared_name" in step.stdout
    assert "iteration 2" not in step.stdout and "more lines" not in step.stdout


def test_show_diffs_a_builtin_candidate_against_its_parent(builtin):
    text = agentkern("traces", "show", builtin.run_id, "--full").stdout
    assert "diff against its parent 001-" in text
    assert "#1 planner  stage 1" in text and '"parent_params"' in text  # the built-in plan, no model call


def test_show_on_a_terminal_goes_through_the_pager_unless_told_not_to(scripted, tmp_path):
    paged = tmp_path / "paged.txt"
    for flags, expect_paged in (([], True), (["--no-pager"], False)):
        leader, follower = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentkern", "traces", "show", scripted.run_id, *flags],
            stdin=follower,
            stdout=follower,
            stderr=follower,
            close_fds=True,
            env={**os.environ, "PAGER": f"cat > {paged}", "COLUMNS": "140", "TERM": "xterm"},
        )
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is done writing
                break
            if not chunk:
                break
            seen += chunk
        proc.wait(timeout=60)
        os.close(leader)
        assert proc.returncode == 0, seen[-2000:]
        if expect_paged:
            assert paged.exists(), "on a terminal, show did not go through the pager"
            assert "iteration 2" in paged.read_text() and b"iteration 2" not in seen
            paged.unlink()
        else:
            assert b"iteration 2" in seen and not paged.exists()


def test_diff_puts_two_runs_side_by_side(scripted, builtin):
    shown = agentkern("traces", "diff", scripted.run_id, builtin.run_id)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "settings" in text and "results" in text and "best kernels:" in text
    for row in ("beam", "max_iters", "best speedup", "tokens", "cost usd"):
        assert row in text
    assert f"--- {scripted.run_id}/{scripted.result['best']['candidate']}.py" in text
    assert f"+++ {builtin.run_id}/" in text


# ---- bad input ------------------------------------------------------------------------------------------


def _one_line_error(proc, *needles):
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in lines[0]


def test_bad_input_is_one_line_and_exit_code_2(scripted, tmp_path):
    _one_line_error(agentkern("traces", "show", "no-such-run"), "no run 'no-such-run'")
    _one_line_error(agentkern("traces", "show", scripted.run_id, "--step", "999"), "not 999")
    _one_line_error(
        agentkern("traces", "export", scripted.run_id, "--format", "zip", "--out", str(tmp_path)), "--format"
    )
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not sqlite" * 100)
    for command in (["list"], ["show", "x"], ["report", "x", "--out", str(tmp_path / "r.html")]):
        _one_line_error(agentkern("traces", *command, "--db", str(garbage)), "not a readable run store")
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    _one_line_error(agentkern("traces", "show", "x", "--db", str(other)), "not a run store")
    assert {r[0] for r in sqlite3.connect(other).execute("SELECT name FROM sqlite_master")} == {"t"}  # untouched
    _one_line_error(agentkern("traces", "show", "x", "--db", str(tmp_path / "missing.db")), "no run store at")
    empty = agentkern("traces", "list", "--json", "--db", str(tmp_path / "missing.db"))
    assert empty.returncode == 0 and json.loads(empty.stdout) == []
