"""`agentkern doctor`: what this machine gives the harness, and what it lacks, in a few lines.

Each check says what it found and, where something is missing, what it costs and how to get it: a CI job
or a new user reads this before trusting a verdict made here.
"""

from __future__ import annotations

import shutil
import subprocess

from agentkern.harness import confine


def checks() -> list[dict]:
    """[{name, ok, found}] for isolation, the compilers and the GPU."""
    bwrap_ok, why = confine.bwrap_status()
    isolation = {
        "name": "candidate isolation",
        "ok": bwrap_ok,
        "found": f"{confine.ISOLATION_BWRAP} ({why})"
        if bwrap_ok
        else f"{confine.ISOLATION_PROCESS} only: {why}. Candidates still run in their own process, but can read "
        "the user's files, write to HOME and outlive agentkern (details.isolation says so in every verdict).",
    }
    return [
        isolation,
        _tool("C++ compiler (cpp kernels)", "g++"),
        _tool("nvcc (CUDA kernels: PTX and cubins)", "nvcc"),
        _tool("GNU patch (an LLM coder's replies as diffs against their parent)", "patch"),
        _triton_for_gpus(),
        _gpu(),
    ]


def _triton_for_gpus() -> dict:
    """Triton's own ptxas and cuobjdump: what compiling a Triton kernel for a GPU that is not here needs."""
    from pathlib import Path

    name = "Triton compiler for GPU architectures (sm_80 ... sm_100a, no GPU needed)"
    try:
        import triton
    except ImportError:
        return {"name": name, "ok": False, "found": "triton is not installed: GPU candidates cannot be checked"}
    tools = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    missing = [t for t in ("ptxas", "cuobjdump") if not (tools / t).is_file()]
    if missing:
        return {
            "name": name,
            "ok": False,
            "found": f"triton {triton.__version__} lacks {', '.join(missing)} in {tools}",
        }
    return {"name": name, "ok": True, "found": f"triton {triton.__version__}: ptxas and cuobjdump in {tools}"}


def _tool(name: str, exe: str) -> dict:
    path = shutil.which(exe)
    if path is None:
        return {"name": name, "ok": False, "found": f"{exe} not found on PATH"}
    try:
        first = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"name": name, "ok": False, "found": f"{path} does not run: {exc}"}
    return {"name": name, "ok": True, "found": f"{path}: {(first or ['?'])[0]}"}


def _gpu() -> dict:
    import torch

    if not torch.cuda.is_available():
        return {"name": "GPU", "ok": False, "found": "no CUDA device: GPU targets are compiled and checked, not timed"}
    return {"name": "GPU", "ok": True, "found": torch.cuda.get_device_name(0)}
