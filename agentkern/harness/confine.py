"""Confinement for a runner process: bubblewrap where it works, plain process isolation where it does not.

Under bubblewrap (Debian's `bubblewrap`, unprivileged: it needs user namespaces) a runner sees the file
system read-only except its own scratch folder, gets a private /tmp, /dev/shm and HOME, no network, its
own PID namespace (it cannot see or signal agentkern, and every process it starts dies with it), and is
killed when the judge dies. AGENTKERN_HOME (work folders, requests, locks, the run store) and the lock
folder are hidden behind empty tmpfs mounts, so a candidate cannot read the judge's files, take its locks
or write to its store. Without bubblewrap (macOS, a container without user namespaces) the runner is an
ordinary child process: the verdict says so in details.isolation, and `agentkern doctor` tells why.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

BWRAP = "bwrap"
# Processes and threads a confined runner may have at once (RLIMIT_NPROC inside its own user namespace):
# torch's and OpenMP's threads and a build's compilers need a few dozen even on a 64-core host.
MAX_TASKS = 512
MAX_TASKS_VARIABLE = "AGENTKERN_MAX_TASKS"
ISOLATION_BWRAP = "bubblewrap"
ISOLATION_PROCESS = "process"


@functools.lru_cache(maxsize=1)
def bwrap_status() -> tuple[bool, str]:
    """(usable, why): bubblewrap is installed and can create its namespaces here (probed once)."""
    if os.environ.get("AGENTKERN_NO_BWRAP"):
        return False, "AGENTKERN_NO_BWRAP is set"
    path = shutil.which(BWRAP)
    if path is None:
        return False, "bubblewrap (bwrap) is not installed; on Debian/Ubuntu: apt-get install bubblewrap"
    try:
        probe = subprocess.run(
            [path, *_namespace_args(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap could not start: {exc}"
    if probe.returncode != 0:
        return False, f"bwrap cannot create namespaces here: {probe.stderr.strip()[:200]}"
    return True, f"bubblewrap at {path}"


def isolation() -> str:
    return ISOLATION_BWRAP if bwrap_status()[0] else ISOLATION_PROCESS


def _namespace_args() -> list[str]:
    # --unshare-all: user, ipc, pid, net, uts, cgroup. No --new-session: the judge has no controlling
    # terminal (it is started in a session of its own), and staying in its process group lets the
    # watchdog's group kill reach the sandbox.
    return ["--unshare-all", "--die-with-parent"]


# Where a runner's scratch folder appears inside the sandbox: the same path for every runner, so that what a
# candidate built (ninja files, Triton's cache) stays valid when its builds are kept for its next evaluation.
SANDBOX_SCRATCH = Path("/tmp/agentkern-runner")


def inside(scratch: Path) -> Path:
    """`scratch` as the runner sees it."""
    return SANDBOX_SCRATCH if bwrap_status()[0] else scratch


def sandbox_env(scratch: Path, inside_scratch: Path, env: dict[str, str]) -> dict[str, str]:
    """`env` with HOME, TMPDIR and every backend's build caches in the sandbox's scratch folder (the only one it
    can write; `inside_scratch` is that folder as the sandbox sees it): one candidate's builds are never loaded
    by another evaluation."""
    from agentkern import backends

    env = dict(env)
    for sub in ("home", "tmp"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(inside_scratch / "home"), TMPDIR=str(inside_scratch / "tmp"))
    for b in backends.all():
        for var, kind in b.cache_env.items():
            env[var] = str(inside_scratch / "cache" / kind)
    return env


def hidden_folders() -> list[Path]:
    """Folders a runner must not see: the judge's store, locks and the user's home."""
    from agentkern.config import home
    from agentkern.harness.device_lock import lock_dir

    folders = [Path(os.path.expanduser("~")), home(), lock_dir()]
    return list(dict.fromkeys(p.resolve() for p in folders))


def command(argv: list[str], scratch: Path, readable: list[Path] | tuple = ()) -> list[str]:
    """`argv` wrapped for confinement: read-only everything, `scratch` writable, the judge's folders hidden
    but for the folders in `readable` (agentkern's own libraries there: op_observer.py), shown read-only."""
    if not bwrap_status()[0]:
        return argv
    scratch = scratch.resolve()
    args = [shutil.which(BWRAP) or BWRAP, *_namespace_args(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for node in gpu_device_nodes():
        args += ["--dev-bind", node, node]
    for folder in hidden_folders():
        if not any(_contains(folder, needed) for needed in _needed_paths()):
            args += ["--tmpfs", str(folder)]
    args += ["--tmpfs", "/tmp"]
    # A private /tmp must not hide the interpreter or agentkern when they live there (a CI job's clone).
    # (Never /tmp itself, nor a folder holding the scratch mount point: a script run from /tmp puts /tmp on
    # sys.path, and binding it read-only would leave nowhere to mount the scratch folder.)
    under_tmp = (
        p for p in _needed_paths() if _contains(Path("/tmp"), p) and not _contains(p, SANDBOX_SCRATCH) and p.exists()
    )
    for needed in _outermost(under_tmp):
        args += ["--ro-bind", str(needed), str(needed)]
    for folder in readable:
        args += ["--ro-bind", str(Path(folder).resolve()), str(Path(folder).resolve())]
    args += ["--bind", str(scratch), str(SANDBOX_SCRATCH), "--chdir", str(SANDBOX_SCRATCH)]
    # The runner caps its tasks before any candidate code (deaths.cap_tasks): in its own user namespace the
    # kernel counts only the sandbox's processes and threads against the limit, so a fork bomb stops there.
    args += ["--setenv", MAX_TASKS_VARIABLE, str(MAX_TASKS)]
    return [*args, "--", *argv]


def gpu_device_nodes() -> list[str]:
    """The GPU's device nodes (NVIDIA's /dev/nvidia*, AMD's /dev/kfd and /dev/dri): bubblewrap's fresh /dev has
    none, and a runner without them sees no GPU (seen on an H200: "No CUDA GPUs are available")."""
    import glob

    return sorted(glob.glob("/dev/nvidia*")) + [p for p in ("/dev/kfd", "/dev/dri") if os.path.exists(p)]


@functools.lru_cache(maxsize=1)
def _needed_paths() -> tuple[Path, ...]:
    """What a runner must still see: the interpreter, its packages and agentkern. A home folder holding any of
    them (pyenv, a virtualenv or a checkout under ~) stays visible, read-only, rather than hidden."""
    import agentkern

    paths = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable), Path(agentkern.__file__).parent]
    paths += [Path(p) for p in sys.path if p]
    return tuple(p.resolve() for p in paths)


def _outermost(paths) -> list[Path]:
    """The paths that are not inside another of them."""
    paths = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for p in paths:
        if not any(_contains(k, p) for k in kept):
            kept.append(p)
    return kept


def _contains(folder: Path, inner: Path) -> bool:
    """True when hiding `folder` would hide `inner` (the interpreter and its packages must stay visible)."""
    try:
        inner.resolve().relative_to(folder)
        return True
    except ValueError:
        return False
