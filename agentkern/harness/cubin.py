"""What a compiled CUDA binary (cubin) says about each of its kernels: registers, spills, static shared
memory (cuobjdump -res-usage) and the SASS instructions that decide speed (cuobjdump -sass): HGMMA
(Hopper's wgmma), HMMA (mma.sync), UTMALDG (TMA loads), LDGSTS (cp.async). The cuobjdump is the one shipped
in the triton wheel, or the CUDA toolkit's on PATH. Used by the CUDA compile check (modes/ptx.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

FUNCTION = re.compile(r"Function (\S+):\s*\n\s*REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")
SASS = {"wgmma": r"\bHGMMA\b", "mma": r"\bHMMA\b", "tma": r"\bUTMALDG\b", "cp_async": r"\bLDGSTS\b"}


def cuobjdump() -> str | None:
    try:
        import triton

        bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        if bundled.is_file():
            return str(bundled)
    except ImportError:
        pass
    return shutil.which("cuobjdump")


def describe_cubin(cubin: Path) -> list[dict]:
    """One record per kernel in the cubin (empty where no cuobjdump can be found)."""
    tool = cuobjdump()
    if tool is None or not cubin.is_file():
        return []
    usage = subprocess.run([tool, "-res-usage", str(cubin)], capture_output=True, text=True, timeout=60).stdout
    sass = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True, timeout=60).stdout
    bodies = _sass_by_function(sass)
    names = _demangled([m[0] for m in FUNCTION.findall(usage)])
    kernels = []
    for name, reg, stack, shared, local in FUNCTION.findall(usage):
        body = bodies.get(name, "")
        kernels.append(
            {
                "kernel": names.get(name, name),
                "registers": int(reg),
                "spill_bytes": max(int(stack), int(local)),
                "shared_bytes": int(shared),
                "instructions": {key: len(re.findall(pattern, body)) for key, pattern in SASS.items()},
            }
        )
    return kernels


def _sass_by_function(sass: str) -> dict[str, str]:
    parts = re.split(r"\n\s*Function : (\S+)\n", sass)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _demangled(names: list[str]) -> dict[str, str]:
    """C++ names as written (c++filt where it is installed), else as the cubin has them."""
    tool = shutil.which("c++filt")
    if tool is None or not names:
        return {}
    out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=30).stdout
    return dict(zip(names, out.splitlines()))
