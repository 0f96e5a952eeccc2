"""Build C++ kernels into shared libraries and load them: with ctypes, and as torch custom ops.

Candidate solutions call `compile_cpp(SOURCE)` at import time. A plain `g++ -shared` of a kernel that does
not include the torch headers builds in well under a second (a `load_inline` build takes ~30 s because of
those headers), and the library is cached by a hash of the source, the flags and the compiler, so an
unchanged kernel never rebuilds.

`compile_with_ops(SOURCE)` builds the same source against torch's headers as well (only the per-op ATen
headers and torch/library.h: ~4 s, not load_inline's ~30 s), with `AK_NS` defined: the source's
`#ifdef AK_NS` part registers its launcher as a torch custom op in C++ (TORCH_LIBRARY), so a model calls the
kernel as `torch.ops.<ns>.<name>(x)`: checks, allocation and the call cost about what an ATen op's do (one
row of relu: 2.4 us a call, against 3.9 us through the ctypes launcher and 1.8 us for eager torch.relu;
benchmarks/launcher_overhead.py, docs/harness.md). Where torch ships no headers, the build against them
fails or AGENTKERN_NO_TORCH_OPS is set, it returns the plain library and no ops: the ctypes launcher runs.

This module runs inside the evaluation sandbox (it is imported by untrusted candidate code), so it imports
nothing heavy and nothing from agentkern but helpers, config and cpu_isa.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from agentkern import cpu_isa
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


def default_flags() -> tuple[str, ...]:
    """DEFAULT_FLAGS, then the x86-64 level AGENTKERN_CPU_ISA holds builds to, if any (cpu_isa.py)."""
    return DEFAULT_FLAGS + cpu_isa.compile_flags()


def library_path(source: str, name: str = "kernel", flags: tuple[str, ...] | None = None, cxx: str = "g++") -> Path:
    flags = default_flags() if flags is None else flags
    key = sha256_text(source, " ".join(flags), _compiler_id(cxx))[:24]
    return _cache_root() / key / f"lib{name}.so"


def compile_cpp(
    source: str,
    name: str = "kernel",
    extra_flags: tuple[str, ...] = (),
    cxx: str | None = None,
    libs: tuple[str, ...] = (),
) -> ctypes.CDLL:
    """Compile `source` (exported functions declared `extern "C"`) and return the loaded library. `libs` go
    after the source on the command line (a linker drops a library named before the code that needs it)."""
    lib_path = built_library(source, name, default_flags() + tuple(extra_flags), libs, cxx)
    # RTLD_LOCAL keeps two candidates' symbols apart when both are loaded into one process.
    return ctypes.CDLL(str(lib_path), mode=os.RTLD_LOCAL)


def built_library(
    source: str, name: str, flags: tuple[str, ...], libs: tuple[str, ...] = (), cxx: str | None = None
) -> Path:
    """The cached library of `source` built with exactly these flags, built now when missing (not loaded:
    agentkern's own libraries are built by the judge and loaded by a runner, harness/op_observer.py)."""
    cxx = cxx or os.environ.get("CXX") or "g++"
    if shutil.which(cxx) is None:
        raise CompileError(f"C++ compiler {cxx!r} not found on PATH")
    lib_path = library_path(source, name, flags + tuple(libs), cxx)
    if not lib_path.exists():
        global BUILDS
        BUILDS += 1
        _build(source, lib_path, flags, cxx, libs)
    return lib_path


@cache
def torch_build_flags() -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(compile flags, libraries) to build against the torch this process runs; None when it has no headers."""
    import torch  # a solution that asks has imported it already

    root = Path(torch.__file__).parent
    include, lib = root / "include", root / "lib"
    if not (include / "torch" / "library.h").is_file() or not lib.is_dir():
        return None
    abi = int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))
    flags = (f"-I{include}", f"-I{include / 'torch' / 'csrc' / 'api' / 'include'}", f"-D_GLIBCXX_USE_CXX11_ABI={abi}")
    return flags, (f"-L{lib}", f"-Wl,-rpath,{lib}", "-lc10", "-ltorch_cpu", "-ltorch")


def _cache_root() -> Path:
    return Path(os.environ.get("AGENTKERN_CPP_CACHE") or cache_dir("cpp"))


def op_namespace(source: str) -> str:
    """The torch.ops namespace a source's ops register under: one per source and build folder. Two kernels
    loaded into one process (two candidates, a kernel and its variant) never register the same namespace, and
    neither does one source built in two folders (a second TORCH_LIBRARY for a namespace aborts the process);
    the same library loaded twice is one dlopen handle, registered once."""
    return "ak_" + sha256_text(source, str(_cache_root()))[:16]


def compile_with_ops(source: str, name: str = "kernel", extra_flags: tuple[str, ...] = ()):
    """(library, torch.ops namespace or None): `source` built against torch with AK_NS defined when that
    works, else built plain (its ctypes functions only)."""
    build = None if os.environ.get("AGENTKERN_NO_TORCH_OPS") else torch_build_flags()
    if build is not None:
        import torch

        ns = op_namespace(source)
        try:
            lib = compile_cpp(source, name, extra_flags + build[0] + (f"-DAK_NS={ns}",), libs=build[1])
            return lib, getattr(torch.ops, ns)
        except (CompileError, OSError):
            pass  # no toolchain for torch's headers, or its library will not load: the plain build below
    return compile_cpp(source, name, extra_flags), None


def _build(source: str, lib_path: Path, flags: tuple[str, ...], cxx: str, libs: tuple[str, ...] = ()) -> None:
    lib_path.parent.mkdir(parents=True, exist_ok=True)
    # Build in a private temp dir, then rename: concurrent evaluations of the same kernel never see a
    # half-written library.
    with tempfile.TemporaryDirectory(dir=lib_path.parent, prefix=".build-") as tmp:
        src = Path(tmp) / "kernel.cpp"
        src.write_text(source)
        out = Path(tmp) / lib_path.name
        proc = subprocess.run(
            [cxx, *flags, str(src), *libs, "-o", str(out)], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise CompileError(f"{cxx} failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
        os.replace(out, lib_path)
        (lib_path.parent / "kernel.cpp").write_text(source)  # kept for people reading the cache


def ptr(tensor) -> ctypes.c_void_p:
    """A tensor's data pointer as a ctypes argument."""
    return ctypes.c_void_p(tensor.data_ptr())
