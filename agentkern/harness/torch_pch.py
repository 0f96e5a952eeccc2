"""Torch's headers, precompiled once by the judge, for the C++ builds of every candidate.

A candidate that registers its kernel as a torch op (agentkern/native.py) builds against torch's headers, and
reading them is most of its build: ~8 s of g++ a candidate on a 2-core host, where a bench compiles hundreds,
each beside another evaluation's timed blocks. The judge builds them once as a g++ precompiled header (~15 s,
~280 MB, cached by the flags, the compiler and the torch version); a runner's sandbox shows the folder
read-only (a candidate can use the header, never change what another candidate's build includes) and names it
in AGENTKERN_TORCH_PCH; native.compile_with_ops includes it first when it was built for the same flags.

AGENTKERN_NO_TORCH_PCH=1 turns it off (every build reads the headers itself, as before).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from agentkern import native

OFF_ENV = "AGENTKERN_NO_TORCH_PCH"
BUILD_TIMEOUT_S = 300  # ~15 s on an idle 2-core host; the evaluation waiting on it is under no other limit


def folder() -> Path | None:
    """The folder the headers are built in (shown read-only to runners), or None where they are off."""
    if os.environ.get(OFF_ENV) or os.environ.get("AGENTKERN_NO_TORCH_OPS"):
        return None
    from agentkern.config import cache_dir

    return cache_dir("torch-pch")


def runner_env() -> dict[str, str]:
    """What a runner's environment gains: the folder's name, where there is one."""
    root = folder()
    return {native.TORCH_PCH_ENV: str(root)} if root is not None else {}


def readable() -> list[Path]:
    """What a sandboxed runner must be able to read for the headers: their folder, or nothing."""
    root = folder()
    return [root] if root is not None else []


def ensure() -> str:
    """Build the header for the default flags when it is missing. Returns what happened, for the verdict's
    details: "built", "ready", "busy" (another evaluation is building it: this one builds without), "off",
    or "failed: ..." (no torch headers, a compiler that cannot: builds go on without it)."""
    root = folder()
    build = native.torch_build_flags() if root is not None else None
    if root is None or build is None:
        return "off"
    cxx = os.environ.get("CXX") or "g++"
    flags = native.default_flags() + build[0]
    target = root / native.torch_pch_key(flags, cxx)
    if (target / "ak_torch.h.gch").is_file():
        return "ready"
    failed = target.with_name(target.name + ".failed")  # tried once: not again at every evaluation
    if failed.is_file():
        return failed.read_text()
    with open(root / ".lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return "busy"
        if (target / "ak_torch.h.gch").is_file():
            return "ready"
        outcome = _build(target, [f for f in flags if f != "-shared"], cxx)
        if outcome.startswith("failed"):
            failed.write_text(outcome)
        return outcome


def _build(target: Path, flags: list[str], cxx: str) -> str:
    # Built in a private folder and renamed: a runner never sees a header without its .gch, or half a .gch.
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".build-"))
    try:
        tmp.chmod(0o755)  # mkdtemp's 0700 would hide it from a runner under another user id
        header = tmp / "ak_torch.h"
        header.write_text(native.TORCH_PCH_HEADER)
        cmd = [cxx, *flags, "-x", "c++-header", str(header), "-o", f"{header}.gch"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"failed: g++ took over {BUILD_TIMEOUT_S} s"
        if proc.returncode != 0:
            lines = (proc.stderr or "").strip().splitlines()
            return f"failed: {lines[-1] if lines else f'exit {proc.returncode}'}"[:300]
        os.replace(tmp, target)
        return "built"
    except OSError as exc:
        return f"failed: {exc}"[:300]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
