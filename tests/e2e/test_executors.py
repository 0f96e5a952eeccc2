"""Executors (agentkern/executors/): the local pool and Ray give the same verdicts, timing waits for the
device's lock, and a worker killed mid-task costs only its task (retried once, then recorded as failed).

Nothing here is a timed test: every wait is on an event (a file the candidate writes, a phase file, a
future), with a generous deadline only so that a broken build fails instead of hanging.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from support import ROOT, fast_options, read_expectation

from agentkern.executors import EvalTask, make_executor
from agentkern.executors.local import LocalExecutor

DEADLINE_S = 180  # a guard against hanging, not a measurement

# A small suite of verdicts: good kernels, a build failure, a crash, a wrong answer, a raise, a cheat.
CORPUS = [
    ("relu", ROOT / "kernels_dataset/solutions/relu_cpp.py", "ok"),
    ("softmax", ROOT / "kernels_dataset/solutions/softmax_cpp.py", "ok"),
    *(
        (read_expectation(p)[0], p, read_expectation(p)[1])
        for p in (
            ROOT / "tests/harness/broken/compile_error_cpp.py",
            ROOT / "tests/harness/broken/crashed_abort.py",
            ROOT / "tests/harness/broken/incorrect_softmax_unnormalised_row.py",
            ROOT / "tests/harness/broken/runtime_error_raise.py",
            ROOT / "tests/harness/cheats/caches_results_data_ptr.py",
        )
    ),
]


def _tasks():
    return [
        EvalTask(problem, str(path), "cpu", fast_options(run_timeout_s=30, memory_limit_gb=3))
        for problem, path, _ in CORPUS
    ]


def _wait_for(predicate, what: str):
    deadline = time.monotonic() + DEADLINE_S
    while not predicate():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


# ---- a candidate that holds still until the test has killed its worker --------------------------------
HOLD_S = 20  # how long a holding candidate waits to be released (or killed) before it goes on


def _holding_candidate(tmp_path: Path) -> tuple[Path, _Attempts, _Attempts]:
    """(solution, attempts, attempts): a correct ReLU kernel that, on import, writes `started` into its own
    folder (the only one a confined candidate can write) and then waits, up to HOLD_S, for `release` to
    appear there: the test kills its evaluation's judge (or the judge's parent) meanwhile. The two last
    values are the same object, for the tests' (solution, hold, pids) unpacking."""
    prologue = (
        "import os as _os, time as _time\n"
        "open('started', 'w').write(str(_time.time_ns()) + str(_os.getpid()))\n"
        f"_deadline = _time.monotonic() + {HOLD_S}\n"
        "while not _os.path.exists('release') and _time.monotonic() < _deadline:\n"
        "    _time.sleep(0.05)\n"
    )
    solution = tmp_path / "holding_relu.py"
    solution.write_text(prologue + (ROOT / "kernels_dataset/solutions/relu_cpp.py").read_text())
    attempts = _Attempts()
    return solution, attempts, attempts


class _Attempts:
    """Each attempt of the holding candidate: its `started` file in a runner's scratch folder, and the judge
    (the sandboxed worker) that runs it, found from outside: a spare's runners live in `runners-<judge pid>-...`,
    a fresh worker's in its work folder, which is the judge's cwd."""

    def __init__(self) -> None:
        self.since = time.time() - 1.0  # markers of earlier tests (the session shares AGENTKERN_HOME) are not ours
        self.seen: dict[str, tuple[Path, int, int]] = {}  # token -> (marker, judge pid, judge's parent pid)

    def __call__(self) -> list[tuple[int, int]]:
        from agentkern.config import home

        for marker in home().rglob("candidate/started"):
            try:
                if marker.stat().st_mtime < self.since:
                    continue
                token = marker.read_text()
            except OSError:
                continue  # moved with its evaluation's folder meanwhile: found again at its new place
            if token and token not in self.seen:
                judge = _judge_of(marker)
                self.seen[token] = (marker, judge or 0, _parent_of(judge) if judge else 0)
        ordered = sorted(self.seen.items(), key=lambda item: int(item[0][:19]))
        return [(pid, ppid) for _, (_, pid, ppid) in ordered]

    def unlink(self, missing_ok: bool = True) -> None:
        """Release every attempt still waiting."""
        for marker, _, _ in self.seen.values():
            if marker.parent.exists():
                (marker.parent / "release").touch()


def _judge_of(marker: Path) -> int | None:
    folder = marker.parent.parent
    if folder.name.startswith("runners-"):
        return int(folder.name.split("-")[1])
    workdir = folder.parent
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cwd").resolve() == workdir.resolve():
                return int(pid)
        except OSError:
            continue
    return None


def _parent_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return 0


def _started(pids) -> list[tuple[int, int]]:
    """(judge pid, its parent pid) of each attempt that has reached the candidate's import, in order."""
    return pids()


def _kill_attempt(pids, n: int, parent: bool = False) -> None:
    """Wait for the n-th attempt (1-based) to start, then SIGKILL its sandboxed worker (or that worker's
    parent: a Ray worker process)."""
    _wait_for(lambda: len(_started(pids)) >= n, f"attempt {n} to start")
    pid, ppid = _started(pids)[n - 1]
    os.kill(ppid if parent else pid, signal.SIGKILL)


def _relu_task(solution: Path) -> EvalTask:
    return EvalTask("relu", str(solution), "cpu", fast_options(run_timeout_s=60))


# ---- local executor ---------------------------------------------------------------------------------------
def test_local_executor_runs_a_suite_in_parallel_with_the_expected_verdicts():
    with make_executor("local", workers=2) as executor:
        assert executor.capacity == 2
        results = executor.map(_tasks())
    assert [r.status for r in results] == [status for _, _, status in CORPUS], [r.error for r in results]
    assert all(r.details["attempts"] == 1 for r in results)


def test_an_evaluation_times_its_candidate_only_when_the_device_is_free(tmp_path):
    """With another worker's build holding the CPU (shared), an evaluation builds and checks its candidate
    beside it, then waits in the "queued timing" phase; it is timed once the build is over."""
    from agentkern.config import home
    from agentkern.harness.device_lock import building

    started = time.time()
    with LocalExecutor(1) as executor:
        with building("cpu"):
            future = executor.submit(
                EvalTask(
                    "relu", str(ROOT / "kernels_dataset/solutions/relu_cpp.py"), "cpu", fast_options(run_timeout_s=5)
                )
            )

            def queued():
                return any(
                    p.read_text() == "queued timing"
                    for p in (home() / "evals").glob("*/phase")
                    if p.stat().st_mtime >= started - 1
                )

            _wait_for(queued, "the evaluation to queue for the device")
            assert not future.done()
        result = future.result(timeout=DEADLINE_S)
    assert result.status == "ok" and result.speedup, result.error
    phases = result.details["phases"]
    assert phases["queued_s"] > 0 and phases["correctness_s"] > 0 and phases["timing_s"] > 0


def test_a_killed_local_worker_is_retried_once(tmp_path):
    solution, hold, pids = _holding_candidate(tmp_path)
    with LocalExecutor(2) as executor:
        future = executor.submit(_relu_task(solution))
        _kill_attempt(pids, 1)
        _wait_for(lambda: len(_started(pids)) >= 2, "attempt 2 to start")
        hold.unlink()  # the retry runs through
        result = future.result(timeout=DEADLINE_S)
    assert result.status == "ok", result.error
    assert result.details["attempts"] == 2 and len(_started(pids)) == 2


def test_a_worker_lost_twice_is_recorded_as_failed(tmp_path):
    solution, hold, pids = _holding_candidate(tmp_path)
    with LocalExecutor(1) as executor:
        future = executor.submit(_relu_task(solution))
        _kill_attempt(pids, 1)
        _kill_attempt(pids, 2)
        result = future.result(timeout=DEADLINE_S)
    hold.unlink()
    assert result.status == "crashed" and not result.correct
    assert result.details["attempts"] == 2 and result.details["worker_lost"]
    assert "lost 2 times" in result.error and "SIGKILL" in result.error
    assert len(_started(pids)) == 2  # no third try


def test_with_two_problems_in_flight_the_compile_baselines_come_first():
    """bench with --workers 2: both torch.compile baselines are measured before any candidate (an inductor
    compilation beside candidates stalls them, docs/executors.md), and each row still gets its figure."""
    from agentkern.bench.runner import BenchOptions, run_suite
    from agentkern.bench.suites import resolve_suite

    suite = resolve_suite("kernels_dataset", None, ["relu", "sum_rows"])
    events = []
    with make_executor("local", workers=2) as local:
        original = local.submit

        def submit(task):
            events.append("candidate")
            return original(task)

        local.submit = submit
        rows = run_suite(
            suite,
            BenchOptions(target="cpu", max_iters=1, beam=1, compile_baseline=True),
            executor=local,
            on_baseline=lambda i, n, name: events.append(f"baseline {i}/{n}"),
        )
    # One candidate per problem, then each timed again as the run's winner (loop/nodes/confirm.py).
    assert events[:2] == ["baseline 1/2", "baseline 2/2"] and events.count("candidate") == 4, events
    for row in rows:
        assert row["status"] == "ok" and row["compile_ms"] > 0 and row["speedup_compile"] > 0, row


def test_a_segfault_is_a_verdict_not_a_lost_worker():
    """Only deaths from outside are retried: a candidate that crashes by itself is judged once."""
    path = ROOT / "tests/harness/broken/crashed_null_deref.py"
    with LocalExecutor(1) as executor:
        result = executor.submit(EvalTask(read_expectation(path)[0], str(path), "cpu", fast_options())).result()
    assert result.status == "crashed" and result.details["attempts"] == 1


def test_an_optimize_run_completes_when_a_worker_is_killed_mid_task(tmp_path):
    """The beam's two candidates run side by side; one's worker is killed on both attempts. The run goes
    on, the other candidate wins, and the trace holds each candidate and each compiler step once."""
    from agentkern.loop import run as optimize
    from agentkern.loop.deps import OptimizeOptions
    from agentkern.models.scripted import ScriptedModel

    solution, hold, pids = _holding_candidate(tmp_path)
    good = (ROOT / "kernels_dataset/solutions/relu_cpp.py").read_text()
    model = ScriptedModel(
        ["STRATEGY: relu/two\nTwo kernels.", f"```python\n{good}\n```", f"```python\n{solution.read_text()}\n```"]
    )
    store = optimize.open_store()
    run_id = optimize.new_run_id("relu")
    killer = threading.Thread(target=lambda: (_kill_attempt(pids, 1), _kill_attempt(pids, 2)), daemon=True)
    killer.start()
    original = optimize.new_run_id
    optimize.new_run_id = lambda problem: run_id
    try:
        with LocalExecutor(2) as executor:
            result = optimize.run(
                OptimizeOptions(problem="relu", target="cpu", beam=2, max_iters=1),
                policy=optimize.llm_policy(model, store, run_id),
                executor=executor,
                checkpointer=SqliteSaver(sqlite3.connect(tmp_path / "cp.db", check_same_thread=False)),
            )
    finally:
        optimize.new_run_id = original
        hold.unlink(missing_ok=True)
    killer.join(timeout=5)
    assert result["stopped_because"] and result["best"]["candidate"] == "001-0"
    candidates = {c["candidate_id"]: c for c in store.candidates(run_id)}
    assert {k: c["status"] for k, c in candidates.items()} == {"001-0": "ok", "001-1": "crashed"}
    assert "lost 2 times" in candidates["001-1"]["error"]
    compiler_steps = [s for s in store.steps(run_id) if s["agent"] == "compiler"]
    assert sorted(s["key"] for s in compiler_steps) == ["001-0", "001-1"]


# ---- bad input -----------------------------------------------------------------------------------------
def test_bad_executor_input_is_one_clear_error(monkeypatch):
    from agentkern.errors import UserError

    with pytest.raises(UserError, match="--executor must be local or ray"):
        make_executor("slurm")
    with pytest.raises(UserError, match="needs --executor ray"):
        make_executor("local", ray_address="127.0.0.1:6379")
    with pytest.raises(UserError, match="cannot reach the Ray cluster at 127.0.0.1:1"):
        make_executor("ray", ray_address="127.0.0.1:1")
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(UserError, match=r"needs Ray, which is not installed: pip install -e '\.\[ray\]'"):
        make_executor("ray")


def test_cli_reports_bad_executor_input_without_a_traceback():
    import subprocess
    import sys

    for args, message in (
        (["--executor", "ray", "--ray-address", "127.0.0.1:1"], "cannot reach the Ray cluster"),
        (["--workers", "0"], "--workers"),
    ):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "agentkern",
                "bench",
                "run",
                "kernels_dataset",
                "--only",
                "relu",
                "--target",
                "cpu",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2, proc.stderr
        assert message in proc.stderr and "Traceback" not in proc.stderr


# ---- Ray -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ray_executor(tmp_path_factory):
    """A local Ray instance started by this test module (2 CPU slots), stopped at its end. HOME points at
    an empty folder meanwhile: Ray must write nothing there (no token, no session, no logs)."""
    pytest.importorskip("ray", reason="the ray extra is not installed (make install installs it)")
    fake_home = tmp_path_factory.mktemp("user-home")
    real_home = os.environ.get("HOME")
    os.environ["HOME"] = str(fake_home)
    try:
        executor = make_executor("ray", workers=2)
        yield executor
        executor.close()
    finally:
        os.environ["HOME"] = real_home or ""
    assert list(fake_home.iterdir()) == [], "Ray wrote under the user's home"


def test_ray_keeps_its_state_under_agentkern_home(ray_executor):
    import ray

    from agentkern.config import home

    session = Path(ray._private.worker._global_node.get_session_dir_path())
    assert session.resolve().is_relative_to((home() / "ray").resolve())
    assert any((home() / "ray").glob("session_*/logs"))
    assert ray_executor.capacity == 2


def test_ray_gives_the_same_verdicts_as_the_local_executor(ray_executor):
    tasks = _tasks()
    with make_executor("local", workers=2) as local:
        expected = [r.status for r in local.map(tasks)]
    got = ray_executor.map(tasks)
    assert [r.status for r in got] == expected == [status for _, _, status in CORPUS], [r.error for r in got]
    assert [r.details["solution"] for r in got] == [t.solution_path for t in tasks]  # the caller's paths


def test_a_bench_suite_on_ray_matches_the_local_executor(ray_executor):
    """The same small bench suite (two problems, one iteration of two candidates each) through both
    executors: the same rows and the same candidate verdicts."""
    from agentkern.bench.runner import BenchOptions, run_suite
    from agentkern.bench.suites import resolve_suite

    suite = resolve_suite("kernels_dataset", None, ["relu", "sum_rows"])
    opts = BenchOptions(target="cpu", max_iters=1, beam=2, compile_baseline=False)

    def outcome(rows):
        return [(r["name"], r["status"], r["candidates"], r["correct_candidates"]) for r in rows]

    with make_executor("local", workers=2) as local:
        local_rows = run_suite(suite, opts, executor=local)
    ray_rows = run_suite(suite, opts, executor=ray_executor)
    assert outcome(ray_rows) == outcome(local_rows), [
        (r["name"], r.get("reason"), r.get("traceback")) for r in local_rows + ray_rows if r["status"] != "ok"
    ]
    assert [r["name"] for r in ray_rows] == ["relu", "sum_rows"] and all(r["candidates"] == 2 for r in ray_rows)


def test_a_killed_ray_worker_costs_only_its_task(ray_executor, tmp_path):
    """SIGKILL the Ray worker process running the task: Ray runs it again elsewhere and it passes."""
    solution, hold, pids = _holding_candidate(tmp_path)
    future = ray_executor.submit(_relu_task(solution))
    _kill_attempt(pids, 1, parent=True)
    first_worker = _started(pids)[0][1]
    _wait_for(lambda: len(_started(pids)) >= 2, "attempt 2 to start")
    hold.unlink()
    result = future.result(timeout=DEADLINE_S)
    assert result.status == "ok", result.error
    assert len(_started(pids)) == 2 and _started(pids)[1][1] != first_worker  # another Ray worker ran it


def test_a_ray_task_lost_twice_is_a_failed_verdict(ray_executor, tmp_path):
    solution, hold, pids = _holding_candidate(tmp_path)
    future = ray_executor.submit(_relu_task(solution))
    _kill_attempt(pids, 1, parent=True)
    _kill_attempt(pids, 2, parent=True)
    result = future.result(timeout=DEADLINE_S)
    hold.unlink()
    assert result.status == "crashed" and "lost 2 times" in result.error, result.error
    # The executor is still usable: the run would go on.
    assert ray_executor.map(_tasks()[:1])[0].status == "ok"
