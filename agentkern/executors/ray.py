"""The Ray executor: `--executor ray [--ray-address ADDR]`. Each candidate evaluation is one Ray task.

Without an address, agentkern starts a local Ray instance for the run (one CPU slot per --workers, all
cores by default) and stops it at the end. With one (`HOST:6379`, the cluster's GCS, or `ray://HOST:10001`
through Ray Client) it joins that cluster and leaves it running. Ray does the scheduling, the placement and
the retries; agentkern writes no scheduler of its own.

- Resources: a task asks for one CPU; for a GPU target on a cluster that has GPUs, one GPU too (Ray sets
  CUDA_VISIBLE_DEVICES for it), and that GPU model where the cluster advertises it
  (`accelerator_type:H100`). A GPU target on a cluster without GPUs runs on CPUs: Triton candidates are
  checked in the interpreter and timed by the cost model, as on a laptop.
- Files: the task carries the problem's and the candidate's source, not their paths, and the task writes
  them under the node's AGENTKERN_HOME: a node need not share this machine's file system. It needs
  agentkern installed (the same version) in the Python that runs its Ray workers.
- Loss: `max_retries=1`: a worker or node that dies mid-task has its task run once more elsewhere by Ray;
  a second loss comes back as a failed verdict (base.lost_twice), never as an exception that ends the run.
  Inside a task, a lost sandbox worker is retried as in the local executor (base.evaluate_with_retry).
- State: a local instance keeps its session folder and logs under AGENTKERN_HOME/ray, with no dashboard,
  no usage reporting and no auth token written to the home directory (RAY_AUTH_MODE=disabled).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import secrets
import shutil
import socket
import tempfile
from pathlib import Path

from agentkern.errors import UserError
from agentkern.executors.base import EvalTask, Executor, evaluate_with_retry, lost_twice, task_files
from agentkern.types import EvalResult

# Ray puts unix sockets at <temp dir>/session_<date>_<time>_<us>_<pid>/sockets/plasma_store, and a unix
# socket path has at most 107 bytes: the temp dir gets ~45 of them.
MAX_TEMP_DIR_CHARS = 40
CONNECT_TIMEOUT_S = 5.0


def import_ray():
    try:
        import ray
    except ImportError:
        raise UserError(
            "--executor ray needs Ray, which is not installed: pip install -e '.[ray]' "
            "(ray==2.60.0), or use the local executor (--workers N)"
        ) from None
    return ray


def state_dir() -> Path:
    """Where a local Ray instance keeps its sessions and logs: AGENTKERN_HOME/ray. When that path is too
    long for Ray's unix sockets, Ray is handed a short symlink in the temp folder that points there, so
    what Ray writes still lands under AGENTKERN_HOME."""
    from agentkern.config import home

    real = home() / "ray"
    real.mkdir(parents=True, exist_ok=True)
    if len(str(real)) <= MAX_TEMP_DIR_CHARS:
        return real
    digest = hashlib.sha256(str(real).encode()).hexdigest()[:10]
    link = Path(tempfile.gettempdir()) / f"agentkern-ray-{os.getuid()}-{digest}"
    if not (link.is_symlink() and os.readlink(link) == str(real)):
        tmp = link.with_name(f"{link.name}.{secrets.token_hex(4)}")
        tmp.symlink_to(real)
        os.replace(tmp, link)  # atomic: two runs starting at once both end with the right link
    return link


def check_reachable(address: str) -> None:
    """A quick TCP connect, so a wrong --ray-address fails in seconds with one clear line (ray.init would
    retry for a minute, then raise from deep inside Ray)."""
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise UserError(
            f"--ray-address must be HOST:PORT (the GCS, usually port 6379) or ray://HOST:PORT, not {address!r}"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise UserError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None


class RayExecutor(Executor):
    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        target_kind: str = "cpu",
        target_name: str | None = None,
    ) -> None:
        ray = import_ray()
        self._ray = ray
        self._started_here = False
        self._address = address
        if not ray.is_initialized():
            self._init(ray, address, workers)
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        self._options = {"num_cpus": 1, "max_retries": 1, "retry_exceptions": False}
        self.note = None
        if target_kind == "gpu" and gpus:
            self._options["num_gpus"] = 1
            kind = f"accelerator_type:{(target_name or '').upper()}"
            if kind in resources:
                self._options["resources"] = {kind: 0.001}
            else:
                self.note = f"no {target_name} advertised by the cluster: tasks take any GPU"
        elif target_kind == "gpu":
            self.note = "the cluster has no GPUs: candidates are checked on CPUs and timings are predicted"
        slots = gpus if "num_gpus" in self._options else int(resources.get("CPU", 1))
        self.capacity = max(1, min(workers, slots) if workers else slots)
        self._remote = ray.remote(evaluate_shipped).options(**self._options)

    def _init(self, ray, address: str | None, workers: int | None) -> None:
        import logging

        quiet = {"logging_level": logging.WARNING, "log_to_driver": False, "namespace": "agentkern"}
        try:
            if address:
                check_reachable(address)
                ray.init(address=address, **quiet)
            else:
                # Read by Ray's processes at start-up: no token under ~/.ray, no usage report.
                os.environ.setdefault("RAY_AUTH_MODE", "disabled")
                os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
                ray.init(
                    num_cpus=workers or os.cpu_count(), include_dashboard=False, _temp_dir=str(state_dir()), **quiet
                )
        except UserError:
            raise
        except Exception as exc:  # noqa: BLE001 - Ray's failures to start or connect: one line, no traceback
            where = f"the Ray cluster at {address}" if address else "a local Ray instance"
            raise UserError(
                f"could not start or join {where}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            ) from None
        self._started_here = True

    def submit(self, task: EvalTask) -> concurrent.futures.Future:
        ref = self._remote.remote(task, task_files(task))
        verdict: concurrent.futures.Future = concurrent.futures.Future()
        ray = self._ray

        def settle(done: concurrent.futures.Future) -> None:
            exc = done.exception()
            if exc is None:
                verdict.set_result(EvalResult(**done.result()))
            elif isinstance(exc, ray.exceptions.RayTaskError):  # agentkern itself raised: a bug, not a loss
                verdict.set_exception(exc)
            elif isinstance(exc, ray.exceptions.RayError):  # worker or node died on both tries, object lost
                verdict.set_result(
                    lost_twice(task, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                )
            else:
                verdict.set_exception(exc)

        ref.future().add_done_callback(settle)
        return verdict

    def describe(self) -> str:
        where = f"Ray cluster at {self._address}" if self._address else "local Ray instance"
        gpu = ", 1 GPU a task" if "num_gpus" in self._options else ""
        return f"ray executor ({where}), {self.capacity} at a time{gpu}" + (f"; {self.note}" if self.note else "")

    def close(self) -> None:
        if self._started_here:
            self._ray.shutdown()
            self._started_here = False


# ---- inside a Ray worker ---------------------------------------------------------------------------------
_POOL = None  # one warm spare per Ray worker process, kept between its tasks


def evaluate_shipped(task: EvalTask, files: dict) -> dict:
    """Ray task body: write the shipped files under this node's AGENTKERN_HOME, evaluate, and report the
    verdict with the caller's paths (the node's copies are its own business)."""
    global _POOL
    from agentkern.config import home
    from agentkern.harness.evaluate import evaluate
    from agentkern.harness.sandbox import WarmPool

    if _POOL is None:
        _POOL = WarmPool(home() / "spares")
    folder = home() / "ray_tasks" / secrets.token_hex(8)
    folder.mkdir(parents=True)
    problem = folder / files["problem_name"]
    solution = folder / files["solution_name"]
    problem.write_text(files["problem_source"])
    solution.write_text(files["solution_source"])
    local = EvalTask(str(problem), str(solution), task.target, task.options)
    result = evaluate_with_retry(local, evaluate, pool=_POOL)
    result.details.update(problem=task.problem_path, solution=task.solution_path, node=os.uname().nodename)
    if result.status == "ok":
        shutil.rmtree(folder, ignore_errors=True)
    return result.to_json()
