"""How agentkern and a sandboxed worker talk: files in the job's work folder and one line on stdin.

The parent writes REQUEST (JSON) and starts `python -m agentkern.harness.worker REQUEST`, or hands the path
of REQUEST to a spare worker on its stdin once the spare has printed READY_LINE. The worker writes the phase
it is in to PHASE (the parent picks the time limit from it) and its verdict to RESULT; its output goes to LOG.
"""

from __future__ import annotations

from pathlib import Path

REQUEST = "request.json"
RESULT = "result.json"
PHASE = "phase"
LOG = "worker.log"

READY_LINE = "agentkern-worker: imports done, waiting for a request"

# Phases under the compile time limit; every other phase is under the run time limit, except "queued ...":
# waiting for the device (device_lock.py), held by another worker that is under its own limits, or for the
# judge's own preparation (torch_pch.py: a bounded g++ run of agentkern's, not the candidate's time).
COMPILE_PHASES = ("start", "import", "compile")


class Phase:
    """Worker side: tells the parent which limit applies (compile: loading the candidate; run)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def enter(self, name: str) -> None:
        self.path.write_text(name)


def read_phase(workdir: Path) -> str | None:
    """Parent side: the phase the worker last entered, None before it entered any."""
    try:
        return (workdir / PHASE).read_text().strip() or None
    except OSError:
        return None
