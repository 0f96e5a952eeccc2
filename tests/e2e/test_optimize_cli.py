"""`agentkern optimize` as a process: an LLM behind a real OpenAI-compatible server on loopback, --json,
and a run killed with SIGKILL that resumes with --resume, losing nothing and doing nothing twice."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

from fake_openai_server import FakeOpenAIServer, ok
from relu_replies import GOOD
from support import ROOT


def optimize_cmd(server, *extra):
    return [
        sys.executable,
        "-m",
        "agentkern",
        "optimize",
        "relu",
        "--target",
        "cpu",
        "--model",
        "openai/test-model",
        "--api-base",
        server.base_url,
        "--beam",
        "1",
        "--patience",
        "5",
        "--start-from",
        "scratch",  # the model writes every kernel (auto would start relu from the built-in template)
        *extra,
    ]


def test_optimize_with_an_openai_compatible_server_prints_one_json_object():
    with FakeOpenAIServer([ok(GOOD)]) as server:
        proc = subprocess.run(
            optimize_cmd(server, "--max-iters", "2", "--json"), capture_output=True, text=True, cwd=ROOT, timeout=600
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["iterations"] == 2 and result["candidates"] == 2
    assert result["best"]["correct"] and result["best"]["speedup"] > 0
    assert result["beats_reference"] is (result["best"]["speedup"] > 1)  # said plainly, beside the speedup
    assert result["stopped_because"] == "reached --max-iters 2"
    assert result["tokens"] > 0  # the server's usage blocks were counted
    assert "iteration 1: planner" in proc.stderr  # plain progress lines when not on a terminal
    assert len(server.requests) == 4  # planner + coder, twice


def _candidates(run_id):
    db = sqlite3.connect(os.path.join(os.environ["AGENTKERN_HOME"], "runs.db"))
    try:
        return [
            r[0]
            for r in db.execute("SELECT candidate_id FROM candidates WHERE run_id=? ORDER BY candidate_id", (run_id,))
        ]
    finally:
        db.close()


def test_a_killed_run_resumes_where_it_stopped():
    with FakeOpenAIServer([ok(GOOD)]) as server:
        proc = subprocess.Popen(
            optimize_cmd(server, "--max-iters", "3"),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        run_id, deadline = None, time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            time.sleep(0.5)
            db = sqlite3.connect(os.path.join(os.environ["AGENTKERN_HOME"], "runs.db"))
            try:
                row = db.execute(
                    "SELECT run_id FROM runs WHERE status='running' ORDER BY created DESC LIMIT 1"
                ).fetchone()
            except sqlite3.OperationalError:
                row = None
            finally:
                db.close()
            if row and _candidates(row[0]):
                run_id = row[0]
                break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert run_id, "the run never recorded a candidate"
        assert _candidates(run_id) == ["001-0"]
        listed = subprocess.run(
            [sys.executable, "-m", "agentkern", "traces", "list", "--json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        [row] = [r for r in json.loads(listed.stdout) if r["run_id"] == run_id]
        assert row["status"] == "interrupted", row  # not "running" forever
        # No problem argument: the run's settings are stored with it.
        resumed = subprocess.run(
            [sys.executable, "-m", "agentkern", "optimize", "--resume", run_id, "--json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=600,
        )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    result = json.loads(resumed.stdout)
    assert result["run_id"] == run_id and result["iterations"] == 3
    assert _candidates(run_id) == ["001-0", "002-0", "003-0"]
    assert result["best"] is not None and result["best"]["candidate"] in {"001-0", "002-0", "003-0"}
    assert f"resumed (if interrupted: agentkern optimize --resume {run_id})" in resumed.stderr
    db = sqlite3.connect(os.path.join(os.environ["AGENTKERN_HOME"], "runs.db"))
    try:
        assert db.execute("SELECT status FROM runs WHERE run_id=?", (run_id,)).fetchone()[0] == "finished"
    finally:
        db.close()
