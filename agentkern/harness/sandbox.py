"""Run one evaluation in a fresh child process, with limits on compile time, run time and memory.

The child is a new interpreter (`python -m agentkern.harness.worker`, i.e. spawn, never fork) in its own
session, so a hang or a runaway compiler is killed with its whole process group. Memory is watched from
here (resident set of the group), not with RLIMIT_AS, which would break CUDA's large virtual mappings.

Importing torch costs ~1.5 s, more than the rest of an evaluation. A WarmPool keeps one spare worker
that has done its imports and waits for a request: still one fresh process per evaluation (the spare is
used once, then replaced after the evaluation), without paying the import inside the evaluation.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from agentkern import backends, cpu_isa
from agentkern.harness import confine, confined_worker, protocol
from agentkern.harness.deaths import oom_kill_counts, oom_kills_since, output_limit_bytes, read_tail
from agentkern.helpers import atomic_write_json, tail

POLL_S = 0.02
# The memory check reads /proc/*/stat for every process on the machine (0.6 ms with 65 processes, more on a
# busy host), and it runs in agentkern's process while a candidate may be timed: every 5th poll is enough.
MEMORY_POLL_EVERY = 5


@dataclass
class SandboxOutcome:
    result: dict | None  # what the worker wrote, if it finished
    returncode: int | None
    killed_for: str | None  # "compile_timeout", "run_timeout", "memory"
    phase: str
    wall_s: float
    log: str
    warm: bool = False
    rss_last_bytes: int | None = None  # the group's resident memory at the watchdog's last sample
    rss_peak_bytes: int | None = None
    oom_kills: dict[str, int] | None = None  # OOM kills recorded while it ran, by counter; None: unreadable


def _group_rss_bytes(pgid: int) -> int:
    """Resident memory of every process in the worker's group (the judge, its runners, any compiler) and
    of every descendant of the worker: a candidate that leaves the group (setsid) is still counted."""
    procs: dict[int, tuple[int, int, int]] = {}  # pid -> (parent, group, rss pages)
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            procs[int(name)] = (int(fields[1]), int(fields[2]), int(fields[21]))  # ppid, pgrp, rss (pages)
        except (OSError, IndexError, ValueError):
            continue
    counted = {pid for pid, (_, group, _) in procs.items() if group == pgid}
    grew = True
    while grew:  # descendants of anything counted, whatever their group
        more = {pid for pid, (parent, _, _) in procs.items() if parent in counted and pid not in counted}
        counted |= more
        grew = bool(more)
    return sum(procs[pid][2] for pid in counted) * os.sysconf("SC_PAGE_SIZE")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _spawn(
    args: list[str], cwd: Path, env: dict[str, str], log_path: Path, stdin, prefix=(), confined: bool = False
) -> subprocess.Popen:
    argv = [sys.executable, "-m", "agentkern.harness.worker", *args]
    if confined:  # a mode that loads a candidate in the worker (confined_worker.py)
        argv = confine.command(argv, cwd)
    with open(log_path, "w") as log:
        return subprocess.Popen(
            [*prefix, *argv],
            cwd=cwd,
            env=env,
            stdin=stdin,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: killpg reaches compilers and stray children
        )


# Variables a worker reads when it starts (OpenMP and malloc read theirs at load time; triton, imported with
# torch by the spare, reads TRITON_INTERPRET): a spare worker serves only requests whose values match. The
# rest (TMPDIR) go in the request.
SPAWN_TIME_VARS = (
    "OMP_NUM_THREADS",
    "OMP_WAIT_POLICY",  # the judge's and (omp_env.py) the runners' the spare started
    "OMP_PROC_BIND",
    "AGENTKERN_USER_OMP_WAIT_POLICY",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    # The instruction-set level its builds take and the switches torch reads when it loads (cpu_isa.py)
    cpu_isa.ENV,
    *dict.fromkeys(name for level in cpu_isa.LEVELS.values() for name in level.torch_env),
    # Every backend's caches and interpreter switch (agentkern/backends/): AGENTKERN_CPP_CACHE, TRITON_INTERPRET, ...
    *dict.fromkeys(var for b in backends.all() for var in (*b.cache_env, *b.interpreter_env)),
)
PER_REQUEST_VARS = ("TMPDIR",)


class WarmPool:
    """One spare worker, imports done, waiting on stdin for the path of its request."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.spare: tuple[subprocess.Popen, Path, tuple] | None = None

    @staticmethod
    def _key(env: dict[str, str]) -> tuple:
        return tuple(env.get(name) for name in SPAWN_TIME_VARS)

    def take(self, env: dict[str, str]) -> tuple[subprocess.Popen, Path] | None:
        spare, self.spare = self.spare, None
        if spare is None:
            return None
        proc, log_path, key = spare
        if key != self._key(env) or proc.poll() is not None:
            self._discard(spare)
            return None
        return proc, log_path

    def _discard(self, spare: tuple) -> None:
        """Kill an unused spare and remove what it left: its log and its runners' scratch folders (named after
        its pid: session.prestart)."""
        proc, log_path, _ = spare
        _kill_group(proc)
        log_path.unlink(missing_ok=True)
        for folder in self.root.glob(f"runners-{proc.pid}-*"):
            shutil.rmtree(folder, ignore_errors=True)

    def refill(self, env: dict[str, str]) -> None:
        if self.spare is not None:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        log_path = self.root / f"spare-{os.getpid()}-{id(self):x}-{time.monotonic_ns()}.log"
        env = {k: v for k, v in env.items() if k not in PER_REQUEST_VARS}
        proc = _spawn(["--warm"], self.root, env, log_path, subprocess.PIPE)
        self.spare = (proc, log_path, self._key(env))

    def wait_ready(self, timeout_s: float = 30.0) -> bool:
        """Block until the spare has finished its imports (for callers with idle time to spend)."""
        deadline = time.monotonic() + timeout_s
        while self.spare is not None and time.monotonic() < deadline:
            proc, log_path, _ = self.spare
            if proc.poll() is not None:
                return False
            if protocol.READY_LINE in log_path.read_text(errors="replace"):
                return True
            time.sleep(POLL_S)
        return False

    def close(self) -> None:
        if self.spare is not None:
            self._discard(self.spare)
            self.spare = None


def run_worker(
    request: dict,
    workdir: Path,
    env: dict[str, str],
    limits: dict[str, float],
    pool: WarmPool | None = None,
    prefix: list[str] | tuple = (),
) -> SandboxOutcome:
    """Run one request in a fresh worker (or the pool's spare). `prefix` wraps the worker's command line
    (perf stat, ncu: agentkern/harness/counters.py); a wrapped run never uses the spare."""
    confined = confined_worker.applies(request)
    request_path, env = _write_request(request, workdir, env, limits, confined)
    oom_before = oom_kill_counts()
    start = time.monotonic()
    warm = pool.take(env) if pool is not None and not prefix and not confined else None
    if warm is not None:
        proc, log_path = warm
        proc.stdin.write(f"{request_path}\n".encode())
        proc.stdin.close()
    else:
        log_path = workdir / protocol.LOG
        args = [confined_worker.inside_path(request_path, workdir) if confined else str(request_path)]
        proc = _spawn(args, workdir, env, log_path, subprocess.DEVNULL, prefix, confined)
    if pool is not None and not prefix and not confined:
        # The next spare imports torch now, beside this evaluation's build and check: its import holds the
        # device's shared lock (device_lock.py), so it never runs while a candidate is timed. Its three imports
        # (the judge's and the two runners' it pre-starts, ~2.2 s of both cores here) outlast the build and
        # check, so this evaluation's timing waits for them (queued_s); started after the evaluation instead,
        # a spare with idle time before the next request is ready (harness_overhead's warm-ready 2.39 s
        # against 4.28 s), but back to back the bench took 350 s against 311-323 s (2026-11-25): kept here.
        pool.refill(env)
    rss: dict[str, int] = {}
    try:
        killed_for, phase = _watch(proc, workdir, limits, rss)
    except BaseException:
        _kill_group(proc)  # Ctrl-C in the parent must not leave a worker behind
        if pool is not None:
            pool.close()
        raise
    # The worker may have left children (a compiler, a daemon) in its group.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if warm is not None:  # keep the log with the evaluation it belongs to
        log_path = Path(shutil.move(log_path, workdir / protocol.LOG))
    if pool is not None:
        pool.refill(env)  # when no spare was started above
    return SandboxOutcome(
        result=_read_result(workdir) if killed_for is None else None,
        returncode=proc.returncode,
        killed_for=killed_for,
        phase=protocol.read_phase(workdir) or phase,
        wall_s=time.monotonic() - start,
        log=tail(read_tail(log_path)),  # never the whole log: a candidate may have printed gigabytes
        warm=warm is not None,
        rss_last_bytes=rss.get("last"),
        rss_peak_bytes=rss.get("peak"),
        oom_kills=oom_kills_since(oom_before) if oom_before else None,
    )


def _write_request(
    request: dict, workdir: Path, env: dict[str, str], limits: dict, confined: bool = False
) -> tuple[Path, dict[str, str]]:
    workdir.mkdir(parents=True, exist_ok=True)
    request = {
        **request,
        "output_limit_bytes": output_limit_bytes(limits),  # the worker caps its file sizes (deaths.cap_file_size)
        "result_path": str(workdir / protocol.RESULT),
        "phase_path": str(workdir / protocol.PHASE),
        "env": {k: env[k] for k in PER_REQUEST_VARS if k in env},
        "cwd": str(workdir),
    }
    if confined:  # a mode that runs candidate code in the worker: the request as its sandbox sees it
        request, env = confined_worker.prepare(request, workdir, env)
    request_path = workdir / protocol.REQUEST
    atomic_write_json(request_path, request)
    return request_path, env


def _watch(proc: subprocess.Popen, workdir: Path, limits: dict[str, float], rss: dict) -> tuple[str | None, str]:
    """Poll the worker until it exits or breaks a limit: (what it was killed for or None, its last phase).
    `rss` gets the group's last and peak sampled resident memory, for the verdict of a worker killed."""
    phase, phase_started = "start", time.monotonic()
    mem_limit = limits["memory_limit_gb"] * 2**30
    polls = 0
    while proc.poll() is None:
        time.sleep(POLL_S)
        polls += 1
        now_phase = protocol.read_phase(workdir) or phase
        if now_phase != phase:
            phase, phase_started = now_phase, time.monotonic()
        compiling = phase in protocol.COMPILE_PHASES
        limit = limits["compile_timeout_s"] if compiling else limits["run_timeout_s"]
        killed_for = None
        # "queued ...": waiting for the device (device_lock.py), held by another worker that is under
        # its own limits; the wait is not this candidate's run time.
        if not phase.startswith("queued") and time.monotonic() - phase_started > limit:
            killed_for = "compile_timeout" if compiling else "run_timeout"
        elif polls % MEMORY_POLL_EVERY == 0:
            group_rss = _group_rss_bytes(proc.pid)
            if group_rss:  # 0: the group is already gone (a dead worker's stat reads 0 pages)
                rss["last"], rss["peak"] = group_rss, max(group_rss, rss.get("peak", 0))
            if group_rss > mem_limit:
                killed_for = "memory"
        if killed_for:
            _kill_group(proc)
            return killed_for, phase
    return None, phase


def _read_result(workdir: Path) -> dict | None:
    try:
        return json.loads((workdir / protocol.RESULT).read_text())
    except (OSError, json.JSONDecodeError):
        return None
