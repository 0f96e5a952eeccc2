"""The run store under several writers and a kill, and `agentkern traces list / show / diff` on real runs:
what each view shows, that piped output is plain and a terminal gets a pager, and that bad input is one line
and exit code 2."""

import json
import os
import pty
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from traces_runs import STATIC_LINE, agentkern, builtin_run, scripted_run

from agentkern.traces.store import MIGRATIONS, RunStore


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    return scripted_run(tmp_path_factory)


@pytest.fixture(scope="module")
def builtin(tmp_path_factory):
    return builtin_run(tmp_path_factory)


# ---- the store ------------------------------------------------------------------------------------------


def test_the_store_is_in_wal_mode_with_a_busy_timeout_and_fully_migrated(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("PRAGMA busy_timeout").fetchone()[0] >= 10_000
    assert [r[0] for r in store.db.execute("SELECT number FROM _migrations")] == list(range(1, len(MIGRATIONS) + 1))
    columns = {r[1] for r in store.db.execute("PRAGMA table_info(candidates)")}
    assert {"source", "compile_log", "correctness", "timing"} <= columns


def test_migration_2_upgrades_a_store_written_before_it(tmp_path):
    path = tmp_path / "runs.db"
    old = sqlite3.connect(path)
    old.executescript(MIGRATIONS[0])
    old.execute("CREATE TABLE _migrations (number INTEGER PRIMARY KEY, applied REAL)")
    old.execute("INSERT INTO _migrations VALUES (1, 0)")
    old.execute("INSERT INTO candidates (run_id, candidate_id, status) VALUES ('old', '001-0', 'ok')")
    old.commit()
    old.close()
    store = RunStore(path)
    [row] = store.candidates("old")
    assert row["status"] == "ok" and row["source"] is None and row["timing"] is None


def test_a_run_whose_process_is_gone_reads_interrupted(tmp_path):
    """Ctrl-C and errors write `interrupted`; a SIGKILL cannot, so readers ask whether the owner is alive.
    A run owned by a live process, by another host or by nobody (before migration 3) stays `running`."""
    from agentkern.traces.store import process_identity, seen_status
    from agentkern.traces.views import run_summaries

    store = RunStore(tmp_path / "runs.db")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_owner = process_identity(dead.pid)  # read while it lives: its pid and start time
    dead.wait()
    owners = {"alive": process_identity(), "dead": dead_owner, "elsewhere": "some-other-host:1:1", "legacy": None}
    for name, owner in owners.items():
        store.start_run(name, "p.py", "cpu", "cpp", "builtin", {})
        store.db.execute("UPDATE runs SET owner=? WHERE run_id=?", (owner, name))
    store.start_run("stopped", "p.py", "cpu", "cpp", "builtin", {})
    store.claim_run("stopped")
    store.interrupt_run("stopped", "interrupted (Ctrl-C)")
    status = {r["run_id"]: (r["status"], r["stopped_because"]) for r in run_summaries(store)}
    assert status["alive"] == ("running", None) and status["elsewhere"] == ("running", None)
    assert status["legacy"] == ("running", None)
    assert status["dead"][0] == "interrupted" and "gone" in status["dead"][1]
    assert status["stopped"] == ("interrupted", "interrupted (Ctrl-C)")
    assert store.run("dead")["status"] == "interrupted"
    # the row itself is not rewritten by reading; --resume claims it again
    assert store.db.execute("SELECT status FROM runs WHERE run_id='dead'").fetchone()[0] == "running"
    store.claim_run("dead")
    assert store.run("dead")["status"] == "running"
    # a reused pid is another process: same pid, another start time
    host, pid, _ = process_identity().rsplit(":", 2)
    assert seen_status({"status": "running", "owner": f"{host}:{pid}:1"})["status"] == "interrupted"


WRITER = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from agentkern.traces.store import RunStore
    store = RunStore(Path(sys.argv[1]))
    for i in range(int(sys.argv[3])):
        store.step(sys.argv[2], 1, "coder", f"step {i}", {"i": i}, key=str(i))
    if sys.argv[4] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)  # no close, no clean exit: what a crash or kill -9 leaves
""")


def test_a_killed_writer_keeps_every_row_and_writers_do_not_lock_each_other_out(tmp_path):
    db = tmp_path / "runs.db"
    RunStore(db).close()
    killed = subprocess.run([sys.executable, "-c", WRITER, str(db), "killed", "50", "kill"], capture_output=True)
    assert killed.returncode == -9
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(db), f"w{k}", "150", "exit"], stderr=subprocess.PIPE)
        for k in range(3)
    ]
    errors = [w.communicate(timeout=120)[1].decode() for w in writers]
    assert all(w.returncode == 0 for w in writers), errors
    store = RunStore(db)
    assert len(store.steps("killed")) == 50
    assert [len(store.steps(f"w{k}")) for k in range(3)] == [150, 150, 150]


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
    assert good["trials"] == 5 and good["max_abs_diff"] == 0.0
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
    assert "diff against 001-0, the best kernel before iteration 2" in text
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
