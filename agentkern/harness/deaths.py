"""How a sandboxed worker ended, said plainly: who killed it and why (issue 14: "every kill must say who
killed and why"), and the output limits that keep a candidate from exhausting agentkern.

Three killers are told apart:
- agentkern's own watchdog (sandbox._watch): compile or run timeout, the memory limit (`killed_for`);
- the kernel: SIGXFSZ when the worker wrote a file past its file-size limit (RLIMIT_FSIZE, set by the worker
  itself before any candidate code runs), and the out-of-memory killer, learned from the OOM-kill counters
  agentkern can read cheaply (its memory cgroup's, and the machine's in /proc/vmstat) before and after;
- anyone else (an operator, another process, the candidate itself): named as "from outside agentkern's
  limits", with the group's last sampled resident memory so a reader can judge.
Nothing here imports torch or runs candidate code.
"""

from __future__ import annotations

import functools
import os
import signal
from pathlib import Path
from typing import Protocol

from agentkern.helpers import one_line


class SandboxOutcome(Protocol):
    """What this module reads of sandbox.SandboxOutcome (not imported: sandbox imports this module)."""

    result: dict | None
    returncode: int | None
    killed_for: str | None
    phase: str
    log: str
    rss_last_bytes: int | None
    rss_peak_bytes: int | None
    oom_kills: dict[str, int] | None


DEFAULT_OUTPUT_LIMIT_MB = 1024.0  # per file: stops a 2 GB log, leaves room for any build artifact
LOG_TAIL_BYTES = 64 * 2**10  # what agentkern reads of a worker's log, whatever its size

# Signals that come from outside the candidate: the kernel's OOM killer, an operator, a node shutting down.
# A worker that died of one of these (and not by our own hand: killed_for is None) was lost, not judged.
LOST_SIGNALS = (signal.SIGKILL, signal.SIGTERM)


def output_limit_bytes(limits: dict) -> int:
    return int(limits.get("output_limit_mb", DEFAULT_OUTPUT_LIMIT_MB) * 2**20)


def die_with_parent() -> None:
    """The kernel kills this process (SIGKILL) when its parent dies, even by SIGKILL: a worker or runner is
    never left without the process that enforces its limits."""
    import ctypes

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def cap_file_size(limit_bytes: int) -> None:
    """In the worker, before any candidate code: no file it or its children write (its log included) may
    grow past `limit_bytes`. Soft and hard limit both, so the candidate cannot raise it again; a write past
    it raises SIGXFSZ, which kills the writer (a write fails with EFBIG where the signal is ignored)."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    if hard != resource.RLIM_INFINITY:
        limit_bytes = min(limit_bytes, hard)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core dumps of a crashed candidate either
    # Python ignores SIGXFSZ (writes then fail with EFBIG, which a candidate can catch and go on): restore the
    # default, so that the first write past the limit ends the worker and the verdict says why.
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)


def cap_tasks() -> None:
    """In a confined runner, before any candidate code: at most AGENTKERN_MAX_TASKS processes and threads
    (confine.py sets it). Soft and hard, so the candidate cannot raise it. The kernel counts RLIMIT_NPROC per
    user namespace, and bubblewrap gave the runner its own, so only the sandbox's tasks count. Unset outside
    bubblewrap: there the count is the whole user's, and no fixed limit would be right. Root is exempt from
    RLIMIT_NPROC (the kernel's rule); the memory watch and the wall clock still bound a fork bomb there."""
    import resource

    from agentkern.harness.confine import MAX_TASKS_VARIABLE

    value = os.environ.pop(MAX_TASKS_VARIABLE, "")
    if value.isdigit():
        resource.setrlimit(resource.RLIMIT_NPROC, (int(value), int(value)))


def read_tail(path: Path, max_bytes: int = LOG_TAIL_BYTES) -> str:
    """The last `max_bytes` of a file, decoded leniently: agentkern's memory never grows with a log."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - max_bytes))
            return f.read(max_bytes).decode(errors="replace")
    except OSError:
        return ""


@functools.lru_cache(maxsize=1)
def _oom_counter_files() -> tuple[tuple[str, str], ...]:
    """(name, file) for each OOM-kill counter readable here: this process's memory cgroup (v2 memory.events,
    v1 memory.oom_control; the worker runs in the same group), and the machine's."""
    found: list[tuple[str, str]] = []
    cgroup_files = []
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, rel = line.split(":", 2)
            if controllers == "":
                cgroup_files.append(f"/sys/fs/cgroup{rel.rstrip('/')}/memory.events")
            elif "memory" in controllers.split(","):
                cgroup_files.append(f"/sys/fs/cgroup/memory{rel.rstrip('/')}/memory.oom_control")
    except (OSError, ValueError):
        pass
    # Inside a container the cgroup is usually mounted as the root of /sys/fs/cgroup.
    cgroup_files += ["/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"]
    for path in cgroup_files:
        if _read_counter(path) is not None:
            found.append(("cgroup", path))
            break
    if _read_counter("/proc/vmstat") is not None:
        found.append(("machine", "/proc/vmstat"))
    return tuple(found)


def _read_counter(path: str, key: str = "oom_kill") -> int | None:
    try:
        with open(path) as f:
            for line in f:
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        return None
    return None


def oom_kill_counts() -> dict[str, int]:
    """The OOM-kill counters now, by where they come from ("cgroup", "machine"); {} where none is readable."""
    counts = {}
    for name, path in _oom_counter_files():
        value = _read_counter(path)
        if value is not None:
            counts[name] = value
    return counts


def oom_kills_since(before: dict[str, int]) -> dict[str, int]:
    """How many OOM kills each counter recorded since `before` (only those that rose)."""
    now = oom_kill_counts()
    return {name: now[name] - before[name] for name in before if name in now and now[name] > before[name]}


def worker_lost(outcome: SandboxOutcome) -> bool:
    """True when the worker was killed from outside mid-task: the evaluation says nothing about the
    candidate and deserves another try (agentkern/executors/base.py retries it once)."""
    rc = outcome.returncode
    return outcome.result is None and outcome.killed_for is None and rc is not None and -rc in LOST_SIGNALS


def _gib(n: int | None) -> str:
    return f"{n / 2**30:.2f} GiB" if n is not None else "not sampled"


def _killed_by_signal(outcome: SandboxOutcome, limits: dict, sig: int) -> str:
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    during = f"during {outcome.phase}"
    if sig == signal.SIGXFSZ:
        limit_mib = output_limit_bytes(limits) / 2**20
        return f"exceeded the file-size limit of {limit_mib:g} MiB (wrote too much output) {during}"
    if sig not in LOST_SIGNALS:
        return f"worker died with {name} {during}"  # its own crash: a segfault, an abort
    memory = f"its processes last held {_gib(outcome.rss_last_bytes)} (limit {limits['memory_limit_gb']:g} GiB)"
    oom = outcome.oom_kills or {}
    if sig == signal.SIGKILL and oom:
        where = " and ".join(f"the {k}'s OOM-kill count rose by {v}" for k, v in sorted(oom.items()))
        return f"worker killed by the kernel's out-of-memory killer (SIGKILL) {during}: {where}; {memory}"
    checked = "no OOM kill recorded" if outcome.oom_kills is not None else "OOM kills not readable here"
    return (
        f"worker killed from outside agentkern ({name}) {during}: not by agentkern's limits "
        f"({checked}; by another process, an operator or the candidate itself); {memory}"
    )


def describe_death(outcome: SandboxOutcome, limits: dict[str, float]) -> tuple[str, str]:
    """Status and one-line error for a worker that left no result."""
    if outcome.killed_for == "compile_timeout":
        return "timeout", f"compilation/import took longer than {limits['compile_timeout_s']:g} s"
    if outcome.killed_for == "run_timeout":
        return "timeout", f"running took longer than {limits['run_timeout_s']:g} s (phase: {outcome.phase})"
    if outcome.killed_for == "memory":
        return "crashed", f"exceeded the memory limit of {limits['memory_limit_gb']:g} GiB (agentkern's watchdog)"
    rc = outcome.returncode
    if rc is not None and rc < 0:
        return "crashed", _killed_by_signal(outcome, limits, -rc)
    last = one_line(outcome.log.strip().splitlines()[-1] if outcome.log.strip() else None)
    return "crashed", f"worker exited with code {rc} during {outcome.phase} without a verdict" + (
        f": {last}" if last else ""
    )


def death_details(outcome: SandboxOutcome) -> dict:
    """What a reader needs to tell who killed a worker: the group's sampled memory and any OOM kills."""
    details: dict = {}
    if outcome.rss_last_bytes is not None:
        details["memory_last_sampled_gb"] = round(outcome.rss_last_bytes / 2**30, 3)
        details["memory_peak_sampled_gb"] = round((outcome.rss_peak_bytes or 0) / 2**30, 3)
    if outcome.oom_kills:
        details["oom_kills"] = dict(outcome.oom_kills)
    if outcome.returncode is not None and outcome.returncode < 0:
        details["killed_by"] = _killer(outcome)
    return details


def _killer(outcome: SandboxOutcome) -> str:
    sig = -outcome.returncode
    if outcome.killed_for:
        return f"agentkern ({outcome.killed_for})"
    if sig == signal.SIGXFSZ:
        return "kernel (file-size limit)"
    if sig == signal.SIGKILL and outcome.oom_kills:
        return "kernel (out-of-memory killer)"
    return "outside agentkern" if sig in LOST_SIGNALS else "itself (its own crash)"
