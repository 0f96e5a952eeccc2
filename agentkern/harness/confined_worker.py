"""Worker modes that load a candidate in the worker itself run in a runner's sandbox.

Two modes call a candidate's code in the worker rather than in a runner: the hardware-counter run around a
kernel that already passed (modes/profile.py, under perf stat) and the capture of a CUDA candidate's sources
for the compile check without a GPU (modes/ptx.py). Neither holds a secret of a verdict (no trial seeds, no
reference output), but both run candidate code, so under bubblewrap such a worker gets what a runner gets
(confine.py): the file system read-only except its own work folder, seen at the sandbox's fixed path,
AGENTKERN_HOME, the locks and HOME hidden, its own PID namespace, no network. The problem and the solution
are copied into the work folder, and every path of the request is rewritten as the worker sees it. What
the worker would need from outside (the device's timing lock while counters run) its parent takes for it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from agentkern.harness import confine

CONFINED_MODES = ("profile", "cuda_sources")


def applies(request: dict) -> bool:
    # ncu's counters on a GPU stay unconfined: ncu injects itself into its target through /tmp and shared
    # memory, which the sandbox makes private (not tried under bubblewrap yet: docs/harness.md).
    gpu_counters = request.get("mode") == "profile" and request.get("device") == "cuda"
    return request.get("mode") in CONFINED_MODES and not gpu_counters and confine.bwrap_status()[0]


def prepare(request: dict, workdir: Path, env: dict[str, str]) -> tuple[dict, dict[str, str]]:
    """(the request as the confined worker sees it, its environment), with the files it reads copied in."""
    from agentkern.harness import build_cache

    forms = {str(workdir), str(workdir.resolve())}  # the request's paths may name it either way
    workdir = workdir.resolve()
    inside = confine.inside(workdir)
    request = dict(request)
    for key, name in (("problem_path", "problem.py"), ("solution_path", "solution.py")):
        if request.get(key):
            shutil.copyfile(request[key], workdir / name)
            request[key] = str(inside / name)
    if request.get("mode") == "profile":  # the builds the evaluation kept for this file: no rebuild
        build_cache.restore((workdir / "solution.py").read_text(), workdir / "cache")
    for key, value in request.items():
        for form in forms:
            if isinstance(value, str) and (value == form or value.startswith(f"{form}/")):
                request[key] = str(inside / Path(value).relative_to(form))
    env = confine.sandbox_env(workdir, inside, env)
    request["env"] = {**request.get("env", {}), "TMPDIR": env["TMPDIR"]}  # the worker sets these itself
    return request, env


def inside_path(path: Path, workdir: Path) -> str:
    """A path under `workdir` as the confined worker sees it."""
    return str(confine.inside(workdir.resolve()) / path.resolve().relative_to(workdir.resolve()))
