"""The sandboxed side of an evaluation: `python -m agentkern.harness.worker REQUEST.json`.

Started by sandbox.py as a fresh interpreter (spawn, never fork) with its own build directory. It loads
the problem and the candidate, checks correctness over several seeded trials with every guard armed,
times both sides, and writes RESULT.json. Whatever the candidate does (raise, crash, hang, eat memory),
the parent still reaches a verdict: a crash leaves no result file, a hang hits the parent's timeout.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import sys
import traceback
from pathlib import Path

from agentkern import backends  # at start-up: discovered before any candidate code runs
from agentkern.harness.deaths import die_with_parent
from agentkern.harness.protocol import READY_LINE, Phase
from agentkern.helpers import atomic_write_json, one_line, tail

# The worker's modes: "module:callable", imported when a request asks for one, so that this module imports
# none of them (the built-in policy's analysis lives above the harness). A callable takes (request, phase)
# and returns the result dict. Each mode runs trusted code, or a candidate under the guards (the default).
MODES = {
    "evaluate": "agentkern.harness.session:evaluate_request",
    "cuda_sources": "agentkern.harness.modes.ptx:capture_cuda_sources",  # sources to compile-check for PTX
    "profile": "agentkern.harness.modes.profile:profile_request",  # counters around a kernel that passed
    "analyze": "agentkern.policies.builtin.recognize:analyze_request",  # the built-in policy: what is computed
    "baseline": "agentkern.harness.modes.baseline_session:baseline_request",  # torch.compile(Model), for bench
}


def _mode(name: str):
    module, _, attr = MODES[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def _imported_mode(request: dict):
    """The request's mode, imported. On the CPU under the build lock (device_lock.py): a worker started for
    this request (not a spare: the torch.compile baselines never use one) imports torch here, about 1.5 s of
    a core, which beside another worker's measurement would skew it. A spare did these imports under the lock
    already."""
    mode = request.get("mode", "evaluate")
    # On a GPU a build takes no lock; with timing_lock_held the parent holds the device for this worker already
    # (counters.py), and waiting for a shared lock under it would never end.
    if str(request.get("device", "cpu")).startswith("cuda") or request.get("timing_lock_held"):
        return _mode(mode)
    from agentkern.harness.device_lock import building

    with building("cpu"):
        return _mode(mode)


def _is_compile_failure(exc: BaseException) -> bool:
    from subprocess import CalledProcessError

    if isinstance(exc, (SyntaxError, CalledProcessError, ImportError)):
        return True
    # Each backend's own "did not compile" (agentkern/backends/: Triton's CompilationError, load_inline's
    # "Error building extension", compile_cpp's CompileError), matched by class name and message.
    return any(b.compile_failed(type(exc).__name__, str(exc)) for b in backends.all())


def wait_for_request() -> str | None:
    """A spare worker: do the slow imports now, then wait for the parent to send a request's path."""
    die_with_parent()
    from agentkern.harness.device_lock import building

    with building("cpu"):  # importing torch takes a core: never while another worker is measuring
        import torch  # noqa: F401

        from agentkern.harness import session

        session.prestart(Path.cwd())  # the two runners import torch now too

    print(READY_LINE, flush=True)
    line = sys.stdin.readline().strip()
    return line or None  # EOF: the parent went away without using us


def main(request_path: str) -> int:
    # Also for a worker started for this request: if its parent (an executor's thread, a Ray worker) is
    # killed, nobody is left to enforce the limits, so the worker goes too.
    die_with_parent()
    request = json.loads(Path(request_path).read_text())
    if request.get("output_limit_bytes"):  # before any candidate code: no file it writes grows past this
        from agentkern.harness.deaths import cap_file_size

        cap_file_size(int(request["output_limit_bytes"]))
    os.environ.update(request.get("env", {}))  # a spare worker learns TMPDIR, TRITON_INTERPRET here
    os.chdir(request.get("cwd", "."))
    result_path = Path(request["result_path"])
    phase = Phase(Path(request["phase_path"]))
    phase.enter("import")
    try:
        result = _imported_mode(request)(request, phase)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - everything the candidate throws, sys.exit too, is a verdict
        result = {
            "status": "compile_error" if _is_compile_failure(exc) else "runtime_error",
            "correct": False,
            "error": one_line(f"{type(exc).__name__}: {exc}"),
            "details": {"traceback": tail(traceback.format_exc())},
        }
    atomic_write_json(result_path, result)
    sys.stdout.flush()
    # Skip interpreter teardown: a candidate's leftover threads or atexit hooks must not hang the exit.
    os._exit(0)


if __name__ == "__main__":
    random.seed()
    path = wait_for_request() if sys.argv[1] == "--warm" else sys.argv[1]
    if path is None:
        os._exit(0)
    main(path)
