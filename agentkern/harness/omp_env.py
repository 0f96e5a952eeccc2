"""OpenMP's settings, set apart for the judge's process and the runners' (runners.py), from one environment; and
malloc's, the same for both.

The judge's own threads sleep as soon as a parallel region ends: spinning, as libgomp's threads do for a few
milliseconds by default, they would take a core from the runner being timed. A runner gets the user's own
setting back, and its threads bound one per core (OMP_PROC_BIND, as PyTorch's CPU tuning guide advises)
unless the user chose otherwise: unbound, a thread thawed from a freeze may be placed beside its spinning
team mate and wait for a scheduler tick (4-8 ms measured on a 2-core VM, 20-40 times a 0.2 ms call, at
random places in a block: docs/harness.md). No torch here: the parent's side (jobs.py) imports it too.
"""

from __future__ import annotations

# Serve blocks up to 32 MiB (glibc's maximum) from the heap and never trim it, as CUDA's caching allocator does
# on a GPU: it spares both sides (each in its own runner) the page faults of a fresh mmap per call. glibc reads
# them when a process starts.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(2**40)}
JUDGE_OMP_WAIT_POLICY = "PASSIVE"
USER_OMP_WAIT_POLICY = "AGENTKERN_USER_OMP_WAIT_POLICY"  # the user's value, kept aside while the judge runs


def judge_thread_env(env: dict[str, str]) -> dict[str, str]:
    """`env` for the judge's process (jobs.env): its OpenMP threads never spin."""
    env = dict(env)
    if "OMP_WAIT_POLICY" in env and USER_OMP_WAIT_POLICY not in env:
        env[USER_OMP_WAIT_POLICY] = env["OMP_WAIT_POLICY"]
    env["OMP_WAIT_POLICY"] = JUDGE_OMP_WAIT_POLICY
    return env


def runner_thread_env(judge_env: dict[str, str]) -> dict[str, str]:
    """The judge's environment with the user's OpenMP settings back, threads bound unless the user said not."""
    env = dict(judge_env)
    env.pop("OMP_WAIT_POLICY", None)
    if USER_OMP_WAIT_POLICY in env:
        env["OMP_WAIT_POLICY"] = env.pop(USER_OMP_WAIT_POLICY)
    env.setdefault("OMP_PROC_BIND", "true")
    return env
