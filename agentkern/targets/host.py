"""This host as a target: its CPU's figures, read from /proc and /sys, and its bandwidths and matmul rate,
measured per CPU model and cached under AGENTKERN_HOME; and the local GPU's name (nvidia-smi).

Every figure errs on the fast side (the fastest clock any source admits to, SMT threads counted as cores): the
roofline bound built from them must never be beaten by a legitimate kernel. A measurement is the best of
several rounds, each the best of several trials, with one thread per core; it is taken under the device's
timing lock (harness/device_lock.py, a bounded wait) so that no candidate being timed competes with it; and
the cache keeps, figure by figure, the fastest ever measured: a measurement taken while the machine was busy
never replaces a faster one. `remeasure_host()` measures again (the harness does, when a kernel beats the
bound: harness/roofline_check.py).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from agentkern import cpu_isa as isa
from agentkern.config import cache_dir
from agentkern.helpers import atomic_write_json, sha256_text
from agentkern.types import Target


@functools.cache
def local_gpu_name() -> str | None:
    """The first GPU nvidia-smi lists, or None. Cached: one nvidia-smi call per process."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):  # a wedged driver hangs nvidia-smi: the timeout lands here
        return None
    lines = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()] if out.returncode == 0 else []
    return lines[0] if lines else None


_SYS_CPU = Path("/sys/devices/system/cpu")
_DRAM_COPY_BYTES = 256 * 2**20
_CACHE_TRAFFIC_BYTES = 256 * 2**20  # per timed trial of the in-cache copy: a few ms
_MATMUL_N = 1024
AMX_PER_FP32 = 20  # the AMX-BF16 peak over the fp32 FMA peak, on the fast side (cpu_target)
_TRIALS = 4
_ROUNDS = 3  # whole measurements per call, figure by figure the best: a burst of load spoils one, not all
_PAGE = 4096
# The measured figures: bigger is faster, and the cache keeps each one's largest.
FIGURES = ("dram_gbs", "cache_gbs", "matmul_tflops", "fma_tflops")
_MEASURED_KEYS = {*FIGURES, "trials", "cache_copy_kib"}
# How long a first measurement waits for the device's timing lock before measuring anyway (it needs figures).
LOCK_WAIT_S = 30.0


def _read(path: Path | str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _size_kb(text: str) -> float:
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    return float(m[1]) * {"": 1 / 1024, "K": 1, "M": 1024, "G": 1024**2}[m[2]] if m else 0.0


def _cache_sizes_kb(cpus: list[int]) -> tuple[float, float]:
    """(one L2, all L3 together): L3 is counted once per distinct instance (one per CCX on an EPYC)."""
    l2_kb = 0.0
    l3: dict[str, float] = {}
    for cpu in cpus:
        for index in sorted((_SYS_CPU / f"cpu{cpu}" / "cache").glob("index*")):
            level, size = _read(index / "level").strip(), _size_kb(_read(index / "size"))
            if level == "2" and cpu == cpus[0]:
                l2_kb = size
            elif level == "3":
                l3[_read(index / "shared_cpu_list").strip() or str(cpu)] = size
    return l2_kb, sum(l3.values())


def _cpu_facts() -> dict[str, Any]:
    cpuinfo = _read("/proc/cpuinfo")

    def field(key: str) -> list[str]:
        return re.findall(rf"^{key}\s*:\s*(.*)$", cpuinfo, re.M)

    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    model = (field("model name") or ["unknown CPU"])[0].strip()
    flags = isa.cpu_flags(cpuinfo)
    native_bits = 512 if "avx512f" in flags else 256 if flags & {"avx2", "avx"} else 128
    capped = isa.check(flags)  # AGENTKERN_CPU_ISA: a lower x86-64 level than this CPU's own (cpu_isa.py)
    # The fastest clock any source admits to: a slower one would make the compute bound beatable.
    clocks = {
        "cpufreq cpuinfo_max_freq": float(_read(_SYS_CPU / f"cpu{cpus[0]}/cpufreq/cpuinfo_max_freq") or 0) / 1e6,
        "/proc/cpuinfo cpu MHz": max((float(mhz) for mhz in field("cpu MHz")), default=0.0) / 1e3,
        "model name": float((re.findall(r"@\s*([\d.]+)\s*GHz", model) or [0])[0]),
    }
    clock_source, ghz = max(clocks.items(), key=lambda kv: kv[1])
    l2_kb, l3_kb = _cache_sizes_kb(cpus)
    mem_kb = re.findall(r"^MemTotal:\s*(\d+) kB", _read("/proc/meminfo"), re.M)
    simd_bits = native_bits if capped is None else min(native_bits, capped.simd_bits)
    family = (field("cpu family") or ["0"])[0].strip()
    amd_family_25 = "AuthenticAMD" in field("vendor_id") and family == "25"  # Zen 3 and Zen 4
    return {
        "model": model,
        "cores": len(cpus),
        "fma": bool(flags & {"fma", "asimd"}),
        "simd_bits": simd_bits,
        # AMD's family 25 with AVX-512 is Zen 4, which runs each 512-bit operation on 256-bit units in two halves:
        # a register tile that suits a full-width core (Intel's) is not the fastest there (matmul/cpp.json).
        "avx512_halves": simd_bits >= 512 and amd_family_25,
        # An Intel core's L3 (a mesh of slices) does not feed a core's FMAs at the rate AMD's does: blocking that
        # streams a GEMM's packed B from L3 once per row block loses there (matmul/cpp.json's "prefer").
        "intel": "GenuineIntel" in field("vendor_id"),
        # AMD's family 25 without AVX-512 of its own is Zen 3 (a Zen 4 held to AVX2 is not: its caches and
        # prefetchers are Zen 4's): there a row reduction reads fastest with no software prefetch
        # (reduce/cpp.json's "prefer").
        "zen3": native_bits < 512 and amd_family_25,
        "native_simd_bits": native_bits,
        "isa_cap": None if capped is None else capped.name,
        "amx_bf16": capped is None and {"amx_tile", "amx_bf16"} <= flags,
        "ghz": ghz,
        "clock_source": clock_source,
        "l2_kb": l2_kb,
        "l3_kb": l3_kb,
        "memory_gb": round(int(mem_kb[0]) / 2**20, 1) if mem_kb else None,
    }


def avx512_in_halves() -> bool:
    """Whether this CPU's AVX-512 runs each 512-bit operation in two 256-bit halves (AMD Zen 4)."""
    return _cpu_facts()["avx512_halves"]


def zen3_cpu() -> bool:
    """Whether this CPU is an AMD Zen 3 (family 25, no AVX-512): the templates' "zen3" feature."""
    return _cpu_facts()["zen3"]


def intel_cpu() -> bool:
    """Whether this CPU is Intel's (the templates' "intel" feature)."""
    return _cpu_facts()["intel"]


def cpu_model() -> str:
    """This CPU's model and vector width, e.g. `AMD EPYC (AVX-512)`: what a kernel tuned here was tuned for
    (a run's best parameters seed the next run only on the same model: kb/ingest.py)."""
    f = _cpu_facts()
    return f"{f['model']} ({_isa_name(f['simd_bits'])})"


def _isa_name(simd_bits: int) -> str:
    return {512: "AVX-512", 256: "AVX2"}.get(simd_bits, f"{simd_bits}-bit SIMD")


def cpu_description() -> str:
    """One line naming this CPU for recorded figures: model, vector width, cores, caches."""
    f = _cpu_facts()
    cap = ""
    if f["isa_cap"]:
        level = isa.LEVELS[f["isa_cap"]]
        cap = f", held to {level.march} by {isa.ENV}={level.name} (this CPU: {_isa_name(f['native_simd_bits'])})"
    # os.cpu_count, not the affinity: OpenMP with OMP_PROC_BIND pins the calling thread to one core
    return f"{cpu_model()}, {os.cpu_count()} cores, L2 {f['l2_kb']:.0f} KiB/core, L3 {f['l3_kb'] / 1024:.0f} MiB{cap}"


def _copy_pair(nbytes: int):  # -> (src, dst), numpy views of one buffer
    """Source and destination half a page apart: glibc's `rep movsb` copy runs ~10x slower on some x86 CPUs when
    dst - src is just above a multiple of 4 KiB, which would measure libc rather than the memory."""
    import numpy as np

    buf = np.empty(2 * nbytes + _PAGE, np.uint8)
    return buf[:nbytes], buf[nbytes + _PAGE // 2 : 2 * nbytes + _PAGE // 2]


def _timed_parallel(work, spans: list[tuple[int, int]]) -> float:
    """Seconds for `work(lo, hi)` over all spans, one thread each (numpy drops the GIL while it copies)."""
    threads = [threading.Thread(target=work, args=span) for span in spans]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def _best_seconds(fn, reps: int = 1) -> float:
    best = float("inf")
    for _ in range(_TRIALS):
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / reps


def _measure_host(cores: int, l2_kb: float) -> dict[str, Any]:
    """Copy bandwidths in GB/s (bytes read + bytes written per second) and a float32 matmul rate: each figure
    the best of _ROUNDS rounds of _TRIALS trials."""
    rounds = [_measure_round(cores, l2_kb) for _ in range(_ROUNDS)]
    best = {key: max(r[key] for r in rounds) for key in FIGURES}
    return {**rounds[0], **best, "trials": _TRIALS * _ROUNDS}


def _measure_round(cores: int, l2_kb: float) -> dict[str, Any]:
    import numpy as np

    n = _DRAM_COPY_BYTES
    src, dst = _copy_pair(n)
    spans = [(i * n // cores, (i + 1) * n // cores) for i in range(cores)]

    def touch(lo: int, hi: int) -> None:
        src[lo:hi].fill(1)
        dst[lo:hi].fill(0)

    def copy(lo: int, hi: int) -> None:
        np.copyto(dst[lo:hi], src[lo:hi])

    # First touch from every thread: page faults cost far more than the copy, and serially they blow the budget.
    _timed_parallel(touch, spans)
    # All cores usually win; one core can, on a host whose memory a single core already saturates.
    dram_s = min(_timed_parallel(copy, spans if i % 2 == 0 else [(0, n)]) for i in range(_TRIALS))
    src = dst = None  # 2 x 256 MiB: free them before the next measurement

    # Per-core in-cache bandwidth: source and destination together fill half of one L2.
    m = int(max(l2_kb, 64.0) * 1024) // 4
    small_src, small_dst = _copy_pair(m)
    reps = _CACHE_TRAFFIC_BYTES // (2 * m)
    full = _best_seconds(lambda: np.copyto(small_dst, small_src), reps)
    # Less numpy's per-call overhead (a 1-byte copy), ~20% of an L2-sized copy; capped at half, against noise.
    cache_s = max(full - _best_seconds(lambda: np.copyto(small_dst[:1], small_src[:1]), reps), full / 2)

    a = np.ones((_MATMUL_N, _MATMUL_N), np.float32)
    matmul_s = _best_seconds(lambda: a @ a)
    from agentkern.targets.fma_peak import measure_tflops

    return {
        "dram_gbs": round(2 * n / dram_s / 1e9, 1),
        "cache_gbs": round(2 * m / cache_s / 1e9 * cores, 1),  # L2 is private to each core: the cores add up
        "matmul_tflops": round(2 * _MATMUL_N**3 / matmul_s / 1e12, 4),
        "fma_tflops": round(measure_tflops(cores, _TRIALS), 4),  # 0.0 without a C++ compiler
        "trials": _TRIALS,
        "cache_copy_kib": m // 1024,
    }


def _cache_path(facts: dict[str, Any]) -> Path:
    return cache_dir("targets") / f"cpu-{sha256_text(facts['model'], str(facts['cores']))[:16]}.json"


def _read_cache(path: Path) -> dict[str, Any] | None:
    try:
        cached = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return cached if isinstance(cached, dict) and _MEASURED_KEYS <= cached.keys() else None


def keep_fastest(cached: dict[str, Any] | None, measured: dict[str, Any]) -> dict[str, Any]:
    """The record to cache: each figure the larger of the cached and the new one (a slower measurement is
    the machine being busy, not the machine being slower), with the new measurement kept beside as `last`."""
    if cached is None:
        return {**measured, "measurements": 1, "last": {k: measured[k] for k in FIGURES}}
    merged = {**cached, **{k: max(float(cached[k]), float(measured[k])) for k in FIGURES}}
    merged["measurements"] = int(cached.get("measurements") or 1) + 1
    merged["last"] = {k: measured[k] for k in FIGURES}
    merged["measured_at"] = measured.get("measured_at")
    return merged


def _measure_locked(facts: dict[str, Any], lock_wait_s: float, required: bool) -> dict[str, Any] | None:
    """A fresh measurement, taken with the CPU's timing lock held (harness/device_lock.py: no candidate is
    timed, checked or built meanwhile) when it can be had within `lock_wait_s`. Without it: None when the lock
    is `required`, else measured anyway and marked `locked: false`."""
    from agentkern.harness.device_lock import timing_lock_within

    with timing_lock_within("cpu", lock_wait_s) as locked:
        if not locked and required:
            return None
        measured = _measure_host(facts["cores"], facts["l2_kb"])
    return {"model": facts["model"], "cores": facts["cores"], **measured, "locked": locked, "measured_at": time.time()}


def _record(path: Path, measured: dict[str, Any]) -> dict[str, Any]:
    """Merge `measured` into the cache file (keep_fastest), under a lock so two processes measuring at once do
    not lose each other's figures; the merged record, also when the home is read-only (then not cached)."""
    import fcntl

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # a read-only home still gets figures, just not cached ones
        return keep_fastest(None, measured)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        merged = keep_fastest(_read_cache(path), measured)
        try:
            atomic_write_json(path, merged)
        except OSError:
            pass
        return merged
    finally:
        os.close(fd)


def _host_measurements(facts: dict[str, Any]) -> dict[str, Any]:
    """Measured once per CPU model and core count (and again by remeasure_host), then read from
    AGENTKERN_HOME/cache/targets. A first measurement waits for the timing lock at most LOCK_WAIT_S, then
    measures anyway: figures are needed, and a slow one is replaced by the next faster measurement."""
    path = _cache_path(facts)
    cached = _read_cache(path)
    if cached is not None:
        return cached
    return _record(path, _measure_locked(facts, LOCK_WAIT_S, required=False))


def remeasure_host(lock_wait_s: float = LOCK_WAIT_S) -> dict[str, Any]:
    """Measure this host again, with the CPU's timing lock held (waiting for it at most `lock_wait_s`), and
    keep figure by figure the fastest of the cache and the new measurement. Returns {"before": the cached
    figures or None, "measured": this measurement's, "after": what the cache now holds}, or {"skipped": why}
    when the lock could not be had in time: measuring beside another candidate's timing would disturb both."""
    facts = _cpu_facts()
    path = _cache_path(facts)
    before = _read_cache(path)
    measured = _measure_locked(facts, lock_wait_s, required=True)
    if measured is None:
        return {"skipped": f"the CPU's timing lock stayed busy for {lock_wait_s:g} s"}
    after = _record(path, measured)
    return {
        "before": None if before is None else {k: before[k] for k in FIGURES},
        "measured": {k: measured[k] for k in FIGURES},
        "after": {k: after[k] for k in FIGURES},
    }


def cpu_cache_bandwidth_gbs() -> float:
    """Copy bandwidth of data that stays in the caches, all cores together (measured once, cached)."""
    return float(_host_measurements(_cpu_facts())["cache_gbs"])


def cpu_target() -> Target:
    """This host's CPU as a target. Its bandwidths and matmul rate are measured on first use (a second or
    two), then read from the cache (the fastest figures measured so far)."""
    f = _cpu_facts()
    measured = _host_measurements(f)
    lanes = f["simd_bits"] // 32
    derived = f["cores"] * f["ghz"] * lanes * 2 * 2 / 1000
    # A VM's /proc/cpuinfo often shows the base clock, below the turbo the cores really run at: BLAS or the FMA
    # loop beating the formula proves it, and the measured rate then takes over (targets/fma_peak.py).
    fp32 = max(derived, measured["matmul_tflops"], measured["fma_tflops"])
    trials = f"best of {measured['trials']}, fastest of {measured.get('measurements', 1)} measurement(s)"
    half_lane = "derived: 2 x the fp32 peak (upper bound: two 16-bit values per 32-bit lane)"
    peaks = {"fp32": fp32, "fp64": fp32 / 2, "fp16": fp32 * 2, "bf16": fp32 * 2, "int8": fp32 * 4}
    amx_sources = {}
    if f.get("amx_bf16"):
        # AMX-BF16 does 1024 FLOP a cycle a core against AVX-512's 64 (16x), and measured faster still: 3.8 TFLOP/s
        # a core on a 2-core Xeon whose FMA rate implies 3.3 GHz. Hence 20x, on the fast side as every bound here.
        peaks["bf16"] = peaks["amx_bf16"] = fp32 * AMX_PER_FP32
        # An fp32 product within fp32's tolerance needs three bf16 products at the least (bf16x3: each operand
        # split in two parts, the smallest cross term dropped): a third of the AMX rate bounds fp32 kernels.
        peaks["fp32_amx"] = peaks["amx_bf16"] / 3
        peaks["int8"] = max(peaks["int8"], 2 * peaks["amx_bf16"])  # AMX-INT8: twice the bf16 rate
        amx_sources = {
            "peak_tflops.amx_bf16": f"derived: {AMX_PER_FP32} x the fp32 peak (AMX tiles: /proc/cpuinfo amx_bf16)",
            "peak_tflops.fp32_amx": "derived: a third of the AMX-BF16 peak (fp32 products as three bf16 products)",
            "peak_tflops.int8": "derived: 2 x the AMX-BF16 peak (AMX-INT8)",
        }
        half_lane = "derived: the AMX-BF16 peak"
    return Target(
        name="cpu",
        kind="cpu",
        display_name=f"{f['model']} ({f['cores']} cores)",
        peak_tflops=peaks,
        memory_bandwidth_gbs=float(measured["dram_gbs"]),
        memory_gb=f["memory_gb"],
        cores=f["cores"],
        simd_width_bits=f["simd_bits"],
        l2_mb=f["l2_kb"] / 1024,
        l3_mb=f["l3_kb"] / 1024,
        sources={
            "peak_tflops.fp32": (
                f"the larger of derived: {f['cores']} cores x {f['ghz']:.2f} GHz ({f['clock_source']}) x {lanes} lanes "
                f"x 2 (FMA) x 2 pipes = {derived:.4g}, and measured on this host: numpy float32 {_MATMUL_N}^3 "
                f"matmul, {trials} = {measured['matmul_tflops']:.4g}; independent FMAs on every core "
                f"(targets/fma_peak.py), {trials} = {measured['fma_tflops']:.4g}"
            ),
            "peak_tflops.fp64": "derived: half the fp32 peak (64-bit lanes)",
            "peak_tflops.fp16": "derived: 2 x the fp32 peak (upper bound: two 16-bit values per 32-bit lane)",
            "peak_tflops.bf16": half_lane,
            "peak_tflops.int8": "derived: 4 x the fp32 peak (upper bound: four int8 values per 32-bit lane, VNNI)",
            "memory_bandwidth_gbs": f"measured on this host: numpy copy of 256 MiB, {trials}, read + write bytes",
            "memory_gb": "/proc/meminfo MemTotal",
            "cores": "os.sched_getaffinity (logical CPUs this process may use)",
            "simd_width_bits": "/proc/cpuinfo flags (avx512f: 512, avx2 or avx: 256, else 128), at most the level "
            f"{isa.ENV} names",
            "l2_mb": f"{_SYS_CPU}/cpu*/cache/index*/size (one core's L2)",
            "l3_mb": f"{_SYS_CPU}/cpu*/cache/index*/size (every distinct L3 of the usable cores)",
            **amx_sources,  # last: they replace the figures above that AMX raises
        },
        notes=(
            f"FMA: {'yes' if f['fma'] else 'no'}. In-cache copy bandwidth, all cores: {measured['cache_gbs']} GB/s "
            f"(numpy copy of {measured['cache_copy_kib']} KiB per core, {trials}); the roofline uses it when the bytes "
            "fit in the L3 or the L2s. SMT threads count as cores: an over-estimate, so the bound stays a lower bound."
        ),
    )
