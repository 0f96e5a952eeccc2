"""The unit tier's rule as a check on every process start: no sandboxed harness worker, no compiler.

tests/unit/conftest.py wraps subprocess.Popen with it in the test process, and puts this folder on PYTHONPATH
with LOG_VAR set: Python runs this file at start-up in every Python process a unit test starts, so a worker
started behind `python -m agentkern ...` is caught too, and written to that log for the test to fail on.
"""

import os
import re
import shlex
import subprocess

LOG_VAR = "AGENTKERN_UNIT_GUARD_LOG"

# The harness runs each candidate in `python -m agentkern.harness.worker` (harness/sandbox.py); C++ builds
# (agentkern.native, torch's load_inline, inductor) run a C/C++ compiler, CUDA builds nvcc or ptxas.
WORKER_MODULE = "agentkern.harness."
COMPILER = re.compile(r"(c\+\+|g\+\+|gcc|cc|clang\+\+|clang|nvcc|ptxas)(-[\d.]+)?")


def why_forbidden(args) -> str | None:
    """Why starting the command `args` breaks the unit tier's rule, or None when it does not."""
    if isinstance(args, str | bytes | os.PathLike):
        args = shlex.split(os.fsdecode(args))
    argv = [os.fsdecode(arg) for arg in args]
    if any(arg.startswith(WORKER_MODULE) for arg in argv):
        return "starts a sandboxed harness worker"
    if argv and COMPILER.fullmatch(os.path.basename(argv[0])):
        return f"runs the compiler {argv[0]}"
    return None


def guarded(start, report):
    """subprocess.Popen.__init__ (`start`) that first calls `report(why, args)` for a forbidden command;
    `report` raises, so the command never runs. Wrapping __init__ catches subprocess.run and `from subprocess
    import Popen` alike."""

    def guarded_init(self, args, *rest, **kwargs):
        why = why_forbidden(args)
        if why:
            report(why, args)
        start(self, args, *rest, **kwargs)

    return guarded_init


def _report_to_log(why: str, args) -> None:
    with open(os.environ[LOG_VAR], "a") as log:
        log.write(f"{why}: {args!r} (in a child process, pid {os.getpid()})\n")
    raise RuntimeError(f"a unit test's process {why}; such tests belong in tests/harness or tests/e2e")


if os.environ.get(LOG_VAR):
    subprocess.Popen.__init__ = guarded(subprocess.Popen.__init__, _report_to_log)
