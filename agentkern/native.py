"""Build C++ kernels into plain shared libraries and load them with ctypes.

Candidate solutions call `compile_cpp(SOURCE)` at import time. A plain `g++ -shared` of a kernel that does
not include the torch headers builds in well under a second (a `load_inline` build takes ~30 s because of
those headers), and the library is cached by a hash of the source, the flags and the compiler, so an
unchanged kernel never rebuilds.

This module runs inside the evaluation sandbox (it is imported by untrusted candidate code), so it imports
nothing heavy and nothing from agentkern but helpers and config.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from agentkern.config import cache_dir
from agentkern.helpers import sha256_text

DEFAULT_FLAGS = ("-O3", "-march=native", "-fopenmp", "-std=c++17", "-shared", "-fPIC")


# How many libraries this process has built: the harness tells a build's g++ from a kernel's own children.
BUILDS = 0


class CompileError(RuntimeError):
    """The compiler rejected the kernel; the message carries its diagnostics."""


@cache
def _compiler_id(cxx: str) -> str:
    # Part of the cache key: a compiler upgrade must rebuild everything.
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.splitlines()[0] if out.stdout else cxx


def library_path(source: str, name: str = "kernel", flags: tuple[str, ...] = DEFAULT_FLAGS, cxx: str = "g++") -> Path:
    key = sha256_text(source, " ".join(flags), _compiler_id(cxx))[:24]
    return Path(os.environ.get("AGENTKERN_CPP_CACHE") or cache_dir("cpp")) / key / f"lib{name}.so"


def compile_cpp(
    source: str,
    name: str = "kernel",
    extra_flags: tuple[str, ...] = (),
    cxx: str | None = None,
) -> ctypes.CDLL:
    """Compile `source` (exported functions declared `extern "C"`) and return the loaded library."""
    cxx = cxx or os.environ.get("CXX") or "g++"
    if shutil.which(cxx) is None:
        raise CompileError(f"C++ compiler {cxx!r} not found on PATH")
    flags = DEFAULT_FLAGS + tuple(extra_flags)
    lib_path = library_path(source, name, flags, cxx)
    if not lib_path.exists():
        global BUILDS
        BUILDS += 1
        _build(source, lib_path, flags, cxx)
    # RTLD_LOCAL keeps two candidates' symbols apart when both are loaded into one process.
    return ctypes.CDLL(str(lib_path), mode=os.RTLD_LOCAL)


def _build(source: str, lib_path: Path, flags: tuple[str, ...], cxx: str) -> None:
    lib_path.parent.mkdir(parents=True, exist_ok=True)
    # Build in a private temp dir, then rename: concurrent evaluations of the same kernel never see a
    # half-written library.
    with tempfile.TemporaryDirectory(dir=lib_path.parent, prefix=".build-") as tmp:
        src = Path(tmp) / "kernel.cpp"
        src.write_text(source)
        out = Path(tmp) / lib_path.name
        proc = subprocess.run([cxx, *flags, str(src), "-o", str(out)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise CompileError(f"{cxx} failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
        os.replace(out, lib_path)
        (lib_path.parent / "kernel.cpp").write_text(source)  # kept for people reading the cache


def ptr(tensor) -> ctypes.c_void_p:
    """A tensor's data pointer as a ctypes argument."""
    return ctypes.c_void_p(tensor.data_ptr())
