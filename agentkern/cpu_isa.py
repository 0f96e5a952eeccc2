"""The CPU instruction set that CPU kernels are built and judged for: this host's own (the default), or a lower
x86-64 level named by AGENTKERN_CPU_ISA, to make kernels for a fleet of older machines on a newer one:

- `avx2`: x86-64-v3 (AVX2, FMA, F16C, BMI2), what every x86 server since Haswell and Zen 1 runs;
- `avx512`: x86-64-v4 (AVX-512 F/BW/CD/DQ/VL), without AMX or the later AVX-512 extensions.

A level caps both sides of a verdict, or the speedup would be the wrong machine's: candidates are compiled with
`-march=x86-64-vN` (tuned for this CPU), the built-in templates pick their variants from the capped width, and
torch's reference is held to the same level through its libraries' own switches (ATen's vector kernels,
oneDNN, MKL), set for every process agentkern starts. The figures remain this CPU's microarchitecture at that
level: an AVX-512 Zen 4 capped to AVX2 is close to, not the same as, a Zen 3. `cpu_description()` says so.
A candidate that builds itself with torch's load_inline chooses its own flags: the cap does not reach them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from agentkern.errors import UserError

ENV = "AGENTKERN_CPU_ISA"


@dataclass(frozen=True)
class IsaLevel:
    name: str
    simd_bits: int
    march: str
    needs: frozenset[str]  # /proc/cpuinfo flags this host must have to run the level
    torch_env: dict[str, str]  # what holds torch's CPU libraries to the level (read when torch loads)


LEVELS = {
    level.name: level
    for level in (
        IsaLevel(
            "avx2",
            256,
            "x86-64-v3",
            frozenset({"avx2", "fma", "f16c", "bmi2", "movbe"}),
            {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
        ),
        IsaLevel(
            "avx512",
            512,
            "x86-64-v4",
            frozenset({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}),
            {"ATEN_CPU_CAPABILITY": "avx512", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE", "MKL_ENABLE_INSTRUCTIONS": "AVX512"},
        ),
    )
}
NATIVE = ("", "native")


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The feature flags of /proc/cpuinfo (or of the text given): x86's `flags`, Arm's `Features`."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as f:
                cpuinfo = f.read()
        except OSError:
            cpuinfo = ""
    found = re.search(r"^flags\s*:(.*)$", cpuinfo, re.M) or re.search(r"^Features\s*:(.*)$", cpuinfo, re.M)
    return set(found[1].split()) if found else set()


def level() -> IsaLevel | None:
    """The level AGENTKERN_CPU_ISA names, or None for this host's own instruction set."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in NATIVE:
        return None
    if value not in LEVELS:
        raise UserError(f"{ENV}={value!r}: expected one of {', '.join([*LEVELS, 'native'])}")
    return LEVELS[value]


def check(host_flags: set[str]) -> IsaLevel | None:
    """level(), refused when this host cannot run it (the kernels would die of an illegal instruction)."""
    capped = level()
    if capped is not None and not capped.needs <= host_flags:
        missing = ", ".join(sorted(capped.needs - host_flags))
        raise UserError(f"{ENV}={capped.name}: this CPU cannot run {capped.march} (it lacks {missing})")
    return capped


def compile_flags() -> tuple[str, ...]:
    """Flags after `-march=native` that hold a C++ build to the capped level (a later -march wins)."""
    capped = level()
    return () if capped is None else (f"-march={capped.march}", "-mtune=native")


def apply_to_environment(host_flags: set[str] | None = None) -> IsaLevel | None:
    """Check the cap and hold torch to it in this process's environment, which every worker inherits. Call it
    before torch is imported: its libraries read these variables when they load. A value the user set already
    is kept (theirs may be lower still)."""
    capped = check(cpu_flags() if host_flags is None else host_flags)
    if capped is not None:
        for name, value in capped.torch_env.items():
            os.environ.setdefault(name, value)
    return capped
