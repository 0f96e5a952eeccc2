"""The run store under several writers and a kill, and what the views and the report say about a noisy best.
(`agentkern traces list / show / diff` on real runs: tests/e2e/test_traces_list_show_diff.py.)"""

import os
import sqlite3
import subprocess
import sys
import textwrap

from agentkern.traces.store import MIGRATIONS, RunStore

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


# ---- a noisy best, the best-speedup axis ------------------------------------------------------------------


def _stats(median, mean):
    return {
        "median_ms": median,
        "mean_ms": mean,
        "min_ms": median,
        "p10_ms": median,
        "p90_ms": mean,
        "stdev_ms": 0.0,
        "calls": 9,
    }


def _noisy_store(path, kernel_mean_ms):
    """A finished run with one correct candidate, 0.9x, whose kernel timing had the given mean (median 1 ms)."""
    store = RunStore(path)
    store.start_run("noisy", "/problems/relu.py", "cpu", "cpp", "builtin", {})
    record = {
        "id": "001-0",
        "iteration": 1,
        "strategy": "relu:omp",
        "status": "ok",
        "correct": True,
        "speedup": 0.9,
        "kernel_ms": 1.0,
        "reference_ms": 0.9,
    }
    timing = {
        "kernel_ms": 1.0,
        "reference_ms": 0.9,
        "speedup": 0.9,
        "timing": {"kernel": _stats(1.0, kernel_mean_ms), "reference": _stats(0.9, 0.9)},
    }
    store.candidate("noisy", record, {"source": "class ModelNew: pass\n", "timing": timing})
    store.step("noisy", 1, "critic", "speedup@k 0.9", {})
    store.finish_run("noisy", "reached --max-iters 1", "001-0")
    return store


def test_a_best_whose_mean_is_far_above_its_median_is_flagged_noisy(tmp_path, monkeypatch):
    from agentkern import cli
    from agentkern.traces import describe
    from agentkern.traces.trace import load

    monkeypatch.setenv("AGENTKERN_HOME", str(tmp_path))
    _noisy_store(tmp_path / "runs.db", kernel_mean_ms=8.0)
    result = {"run_id": "noisy", "best": {"candidate": "001-0", "predicted": False}}
    note = cli.best_timing_noise(result)  # what `optimize` prints under its best
    assert note and "noisy timing" in note and "8.0x its median" in note
    assert f"{describe.NOISY_MEAN_OVER_MEDIAN:g}x" in note  # the threshold is stated
    trace = load(RunStore(tmp_path / "runs.db"), "noisy")
    assert note in describe.timing_lines(trace.best)  # traces show, and the report's timing lines
    quiet = _noisy_store(tmp_path / "quiet.db", kernel_mean_ms=1.2)
    assert describe.noise_note(load(quiet, "noisy").best) is None


def test_the_report_flags_a_noisy_best_that_does_not_beat_the_reference_and_is_not_private(tmp_path):
    from agentkern.traces.html_report import write_report
    from agentkern.traces.trace import load

    old = os.umask(0o022)
    try:
        out = write_report(load(_noisy_store(tmp_path / "runs.db", 8.0), "noisy"), tmp_path / "r.html")
    finally:
        os.umask(old)
    text = out.read_text()
    assert 'id="best-noisy"' in text and 'id="not-faster"' in text
    assert oct(out.stat().st_mode & 0o777) == oct(0o644)


def test_the_best_speedup_axis_starts_near_the_data_not_at_zero():
    from agentkern.traces import charts

    chart = charts.best_so_far([(1, 1.31), (2, 1.34)])
    assert 1.2 < float(chart.y_ticks[0]["label"]) <= 1.31 and 1.34 <= float(chart.y_ticks[-1]["label"]) < 1.45
    first, second = (m["cy"] for m in chart.marks)
    assert first - second > 0.25 * (chart.y0 - chart.y1)  # the gain takes a quarter of the height at least
    assert chart.guides == []  # 1x is off this axis: no guide drawn outside the plot
    wide = charts.best_so_far([(1, 0.8), (2, 1.5)])
    assert wide.guides and wide.y_ticks[0]["pos"] >= wide.guides[0]["pos"] >= wide.y_ticks[-1]["pos"]
