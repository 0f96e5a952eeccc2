"""The candidate as an adversary of agentkern itself (issue 14): a source built to exhaust the parser, a
flood of output, a kill that must say who killed. (Unit side: tests/unit/test_deaths.py; the command line:
tests/e2e/test_cli.py.)"""

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from support import RELU_KERNEL, fast_options

from agentkern.harness import confine, sandbox
from agentkern.harness.evaluate import evaluate

RELU = """
import os
import signal
import sys
import torch
import torch.nn as nn

{module_code}

class ModelNew(nn.Module):
    def forward(self, x):
        {forward_code}
        return relu_kernel(x)
"""


def candidate(tmp_path, name, module_code="", forward_code="pass"):
    path = tmp_path / f"{name}.py"
    path.write_text(RELU_KERNEL + RELU.format(module_code=module_code, forward_code=forward_code))
    return path


def test_a_deeply_nested_candidate_is_a_compile_error(tmp_path):
    path = candidate(tmp_path, "deep", module_code="Y = " + "-" * 200_000 + "1")
    result = evaluate("relu", path, "cpu", fast_options())
    assert result.status == "compile_error", result.error
    assert result.error == "source too deeply nested: Python's parser gives up on it"


FLOOD = 'CHUNK = "x" * (2**20 - 1) + "\\n"\nfor _ in range(48):\n    sys.stdout.write(CHUNK)\nsys.stdout.flush()'


def test_a_flood_of_output_is_cut_at_the_file_size_limit_and_said_plainly(tmp_path):
    path = candidate(tmp_path, "flood", module_code=FLOOD)  # 48 MiB on stdout, at import
    tracemalloc.start()
    try:
        result = evaluate("relu", path, "cpu", fast_options(output_limit_mb=8), keep_workdir=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.status == "crashed"
    assert result.error.startswith("exceeded the file-size limit of 8 MiB (wrote too much output)"), result.error
    assert result.details["killed_by"] == "kernel (file-size limit)"
    log = Path(result.details["workdir"]) / "worker.log"
    assert log.stat().st_size <= 8 * 2**20
    # agentkern read only the log's tail: its own memory did not grow with the 8 MiB written.
    assert peak < 2 * 2**20, peak
    assert len(result.details["log_tail"]) <= 4003


def test_the_default_output_limit_leaves_an_honest_but_chatty_kernel_alone(tmp_path):
    path = candidate(tmp_path, "chatty", module_code=FLOOD)
    result = evaluate("relu", path, "cpu", fast_options())
    assert result.status == "ok", result.error


def test_reading_a_huge_log_reads_only_its_tail(tmp_path):
    log = tmp_path / "worker.log"
    with open(log, "wb") as f:
        f.truncate(3 * 2**30)  # a sparse 3 GiB "log": reading it whole would take 3 GiB
        f.seek(3 * 2**30 - 5)
        f.write(b"last\n")
    tracemalloc.start()
    try:
        text = sandbox.read_tail(log)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text.endswith("last\n") and peak < 1 * 2**20


def test_a_worker_killed_from_outside_says_so_and_how_much_memory_it_held(tmp_path):
    path = candidate(tmp_path, "selfkill", forward_code="os.kill(os.getpid(), signal.SIGKILL)")
    result = evaluate("relu", path, "cpu", fast_options())
    assert result.status == "crashed" and result.details["worker_lost"]  # retried once by executors/base.py
    assert "killed from outside agentkern (SIGKILL)" in result.error, result.error
    assert "not by agentkern's limits" in result.error
    assert result.details["killed_by"] == "outside agentkern"
    assert result.details["memory_last_sampled_gb"] > 0


def test_an_oom_kill_recorded_while_the_worker_ran_is_named(tmp_path, monkeypatch):
    """The kernel's OOM killer cannot be summoned safely in a test: its counter rising is stood in for."""
    monkeypatch.setattr(sandbox, "oom_kill_counts", lambda: {"cgroup": 3})
    monkeypatch.setattr(sandbox, "oom_kills_since", lambda before: {"cgroup": 1})
    path = candidate(tmp_path, "oomed", forward_code="os.kill(os.getpid(), signal.SIGKILL)")
    result = evaluate("relu", path, "cpu", fast_options())
    assert result.status == "crashed" and result.details["worker_lost"]
    assert "killed by the kernel's out-of-memory killer (SIGKILL)" in result.error, result.error
    assert result.details["oom_kills"] == {"cgroup": 1}
    assert result.details["killed_by"] == "kernel (out-of-memory killer)"


def test_the_memory_watchdog_says_it_was_agentkern(tmp_path):
    hog = "chunks = []\n        while True:\n            chunks.append(bytearray(64 * 2**20))"
    path = candidate(tmp_path, "hog", forward_code=hog)
    result = evaluate("relu", path, "cpu", fast_options(memory_limit_gb=1))
    assert result.status == "crashed" and "agentkern's watchdog" in result.error, result.error
    # The watchdog kills with SIGKILL too, yet the verdict names agentkern, and the evaluation is not "lost".
    assert result.details["killed_by"] == "agentkern (memory)" and not result.details.get("worker_lost")


_THREAD_BOMB = """
import resource, threading, time
from agentkern.harness.deaths import cap_tasks
cap_tasks()
started = 0
try:
    for _ in range(2000):
        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
        started += 1
except RuntimeError:
    pass
print(resource.getrlimit(resource.RLIMIT_NPROC)[0], started)
"""


@pytest.mark.skipif(not confine.bwrap_status()[0], reason="bubblewrap cannot start here")
def test_a_confined_runner_cannot_start_more_tasks_than_its_cap(tmp_path):
    argv = confine.command([sys.executable, "-c", _THREAD_BOMB], tmp_path)
    out = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    limit, started = map(int, out.stdout.split())
    assert limit == confine.MAX_TASKS  # soft and hard, set before any candidate code
    if os.geteuid() != 0:  # the kernel exempts root from RLIMIT_NPROC; measured as nobody: stops at the cap
        assert started < confine.MAX_TASKS


def test_a_spare_discarded_unused_leaves_no_runner_folders_behind(tmp_path):
    from agentkern.harness import jobs

    pool = sandbox.WarmPool(tmp_path / "spares")
    pool.refill(jobs.env("cpu", "cpp", None, tmp_path))
    assert pool.wait_ready(timeout_s=120)
    assert list((tmp_path / "spares").glob("runners-*")), "the spare pre-starts its runners in the pool's folder"
    pool.close()
    assert list((tmp_path / "spares").iterdir()) == []
