"""The judge's look at the native libraries a candidate's runner loaded: a kernel may not be BLAS or ATen.

A C++ or CUDA candidate can compute with a library instead of its own code: link BLAS (`cblas_sgemm`),
oneDNN or MKL, call ATen's compute functions (`at::mm`, `at::_ops::_softmax::call`), or dlopen such a
library at run time. None of that goes through torch's dispatcher in a way its process cannot hide, so the
judge looks from outside: the libraries mapped into the runner (the kernel's /proc/PID/maps, not the
runner's word) that were not there when it became ready, their names, and their undefined dynamic
symbols (`nm -D`). Run after the candidate is loaded, after the trials and after timing.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess

from agentkern.harness.fallback import NEUTRAL_OPS
from agentkern.harness.rejections import Rejected

# Library file names that are a compute library, whatever the kernel does with them.
COMPUTE_LIBRARIES = re.compile(r"(openblas|libblas|libcblas|mkl|dnnl|mkldnn|cublas|cudnn|lapack|flexiblas|blis)", re.I)
# Undefined symbols (demangled) that call a compute library.
BLAS_SYMBOL = re.compile(
    r"(cblas_|^[sdczh](gemm|gemv|symm|syrk|trsm|axpy|dot)_?$|[sdhb]gemm|mkl_|dnnl_|openblas)", re.I
)
ATEN_OP = re.compile(r"^at::_ops::(\w+)::")
ATEN_COMPUTE = re.compile(r"^at::(native|cpu|cuda|meta|compositeimplicitautograd|compositeexplicitautograd)::(\w+)")


def mapped_libraries(pid: int) -> set[str]:
    """Paths of the shared objects mapped into process `pid`."""
    found = set()
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and ".so" in parts[5]:
                    found.add(parts[5].strip().removesuffix(" (deleted)"))
    except OSError:
        pass
    return found


@functools.lru_cache(maxsize=512)
def _undefined_symbols(path: str, size: int, mtime: float) -> tuple[str, ...]:
    nm = shutil.which("nm")
    if nm is None:
        return ()
    try:
        out = subprocess.run([nm, "-D", "-C", "--undefined-only", path], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return tuple(line.split(maxsplit=1)[-1].strip() for line in out.stdout.splitlines() if line.strip())


def _neutral(op: str) -> bool:
    """An ATen op name, possibly with its overload appended (`empty_memory_format`, `to_dtype`), that is
    allocation, a view or a copy."""
    return op in NEUTRAL_OPS or any(op.startswith(f"{name}_") for name in NEUTRAL_OPS if len(name) > 1)


def refused_symbol(symbol: str) -> str | None:
    """Why an undefined symbol is a compute library's, or None."""
    name = symbol.split("(")[0].split("@")[0]
    if BLAS_SYMBOL.search(name):
        return f"calls {name} (BLAS)"
    op = ATEN_OP.match(name)
    if op and not _neutral(op.group(1)):
        return f"calls ATen's {op.group(1)} op"
    compute = ATEN_COMPUTE.match(name)
    if compute and not _neutral(compute.group(2)):
        return f"calls {compute.group(0)}"
    return None


def check_libraries(paths: set[str]) -> None:
    """Reject the first library that is, or calls, a compute library."""
    for path in sorted(paths):
        base = os.path.basename(path)
        if COMPUTE_LIBRARIES.search(base):
            raise Rejected("native_fallback", f"loaded the compute library {base}")
        try:
            st = os.stat(path)
        except OSError:
            continue  # gone (a deleted build): its mapping was checked by name
        for symbol in _undefined_symbols(path, st.st_size, st.st_mtime):
            why = refused_symbol(symbol)
            if why:
                raise Rejected("native_fallback", f"{base} {why}: a kernel computes with its own code")
