"""Who killed a sandboxed worker, and why (agentkern/harness/deaths.py), from made-up outcomes; the real kills
are in tests/harness/test_worker_limits.py."""

import signal
import subprocess
import sys

import pytest

from agentkern.harness import deaths
from agentkern.harness.sandbox import SandboxOutcome

LIMITS = {"compile_timeout_s": 300, "run_timeout_s": 120, "memory_limit_gb": 8, "output_limit_mb": 1024}


def outcome(rc, killed_for=None, oom=None, rss=3 * 2**30):
    return SandboxOutcome(
        None, rc, killed_for, "timing", 1.0, "", rss_last_bytes=rss, rss_peak_bytes=rss, oom_kills=oom
    )


def test_sigkill_with_no_oom_kill_recorded_is_named_as_from_outside():
    out = outcome(-signal.SIGKILL, oom={})
    status, error = deaths.describe_death(out, LIMITS)
    assert status == "crashed" and deaths.worker_lost(out)
    assert error.startswith("worker killed from outside agentkern (SIGKILL) during timing: not by agentkern's limits")
    assert "no OOM kill recorded" in error and "last held 3.00 GiB (limit 8 GiB)" in error
    assert deaths.death_details(out) == {
        "memory_last_sampled_gb": 3.0,
        "memory_peak_sampled_gb": 3.0,
        "killed_by": "outside agentkern",
    }


def test_sigkill_while_an_oom_counter_rose_names_the_oom_killer():
    out = outcome(-signal.SIGKILL, oom={"cgroup": 1})
    _, error = deaths.describe_death(out, LIMITS)
    assert error.startswith("worker killed by the kernel's out-of-memory killer (SIGKILL) during timing")
    assert "the cgroup's OOM-kill count rose by 1" in error and deaths.worker_lost(out)
    assert deaths.death_details(out)["killed_by"] == "kernel (out-of-memory killer)"


def test_unreadable_oom_counters_are_said_to_be_unreadable():
    _, error = deaths.describe_death(outcome(-signal.SIGKILL, oom=None), LIMITS)
    assert "OOM kills not readable here" in error


def test_sigxfsz_is_the_file_size_limit_and_not_a_lost_worker():
    out = outcome(-signal.SIGXFSZ)
    assert deaths.describe_death(out, LIMITS) == (
        "crashed",
        "exceeded the file-size limit of 1024 MiB (wrote too much output) during timing",
    )
    assert not deaths.worker_lost(out)


@pytest.mark.parametrize(
    "killed_for, expected",
    [("memory", "exceeded the memory limit of 8 GiB (agentkern's watchdog)"), ("run_timeout", "running took longer")],
)
def test_agentkerns_own_kills_name_agentkern(killed_for, expected):
    out = outcome(-signal.SIGKILL, killed_for=killed_for)
    assert expected in deaths.describe_death(out, LIMITS)[1] and not deaths.worker_lost(out)
    assert deaths.death_details(out)["killed_by"] == f"agentkern ({killed_for})"


def test_a_crash_of_its_own_is_not_from_outside():
    out = outcome(-signal.SIGSEGV)
    assert deaths.describe_death(out, LIMITS)[1] == "worker died with SIGSEGV during timing"
    assert deaths.death_details(out)["killed_by"] == "itself (its own crash)" and not deaths.worker_lost(out)


def test_oom_counters_are_read_from_the_files_that_exist(tmp_path, monkeypatch):
    events = tmp_path / "memory.events"
    events.write_text("low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n")
    monkeypatch.setattr(deaths, "_oom_counter_files", lambda: (("cgroup", str(events)),))
    before = deaths.oom_kill_counts()
    assert before == {"cgroup": 2} and deaths.oom_kills_since(before) == {}
    events.write_text("oom_kill 5\n")
    assert deaths.oom_kills_since(before) == {"cgroup": 3}


def test_this_machines_oom_counters_are_found_when_linux_has_them():
    deaths._oom_counter_files.cache_clear()
    counts = deaths.oom_kill_counts()
    if sys.platform == "linux":
        assert "machine" in counts  # /proc/vmstat has had oom_kill since Linux 4.13


def test_a_capped_process_dies_of_sigxfsz_at_its_first_write_past_the_limit(tmp_path):
    code = (
        "from agentkern.harness.deaths import cap_file_size\n"
        "cap_file_size(2**20)\n"
        f"open({str(tmp_path / 'big')!r}, 'wb').write(b'x' * 2**21)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGXFSZ
    assert (tmp_path / "big").stat().st_size <= 2**20
