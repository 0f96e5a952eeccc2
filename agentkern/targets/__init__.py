"""Hardware targets: published GPU figures, this host's CPU figures, and the roofline bound on a kernel's time.

The roofline bound is what `roofline_fraction` divides by, so every figure errs on the fast side: a legitimate
kernel must never beat its bound. GPU figures are NVIDIA's published dense peaks, each with its source URL; the
CPU figures are read from /proc and /sys, and its bandwidths are measured once and cached.
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

from agentkern.config import cache_dir
from agentkern.errors import UserError
from agentkern.helpers import atomic_write_json, sha256_text
from agentkern.types import Target

_A100 = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
_AMPERE_WP = "https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf"
_H100 = "https://www.nvidia.com/en-us/data-center/h100/"
_HOPPER_WP = "https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper"
_H200 = "https://www.nvidia.com/en-us/data-center/h200/"
_L4 = "https://www.nvidia.com/en-us/data-center/l4/"
_L40S = "https://www.nvidia.com/en-us/data-center/l40s/"
_ADA_WP = "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
_RTX4090 = "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4090/"
_CUDA_SPECS = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#features-and-technical-specifications"
_CUDA_THROUGHPUT = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#arithmetic-instructions"
_CUDA_GPUS = "https://developer.nvidia.com/cuda-gpus"
_RUNTIME = "not in NVIDIA's published specs: the value cudaGetDeviceProperties reports on this GPU"
_ADA_FP64 = f"{_CUDA_THROUGHPUT} (derived: Ada runs FP64 at 1/64 of the FP32 rate, with no FP64 tensor cores)"
_DENSE = "Tensor-core figures are dense; the datasheets headline the 2:4-sparsity figures, twice these."


def _gpu(
    name: str,
    display_name: str,
    peaks: dict[str, float],
    bandwidth_gbs: float,
    memory_gb: float,
    sms: int,
    smem_kb: float,
    l2_mb: float,
    cc: str,
    spec: str,
    arch: str,
    notes: str,
    other_sources: dict[str, str] | None = None,
) -> Target:
    """A catalog entry: throughput, bandwidth and memory come from `spec`, the SM layout from `arch`."""
    sources = {f"peak_tflops.{k}": spec for k in peaks} | dict.fromkeys(("memory_bandwidth_gbs", "memory_gb"), spec)
    sources |= dict.fromkeys(("sms", "shared_mem_per_sm_kb", "l2_mb"), arch) | {"compute_capability": _CUDA_GPUS}
    sources |= other_sources or {}
    return Target(
        name=name,
        kind="gpu",
        display_name=display_name,
        peak_tflops=peaks,
        memory_bandwidth_gbs=bandwidth_gbs,
        memory_gb=memory_gb,
        sms=sms,
        shared_mem_per_sm_kb=smem_kb,
        l2_mb=l2_mb,
        compute_capability=cc,
        sources=sources,
        notes=notes,
    )


def _hopper() -> dict[str, float]:
    """H100 SXM5 and H200 SXM share GH100's compute figures; a fresh dict each, so no two targets share one."""
    return {"fp32": 67.0, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4, "fp8": 1978.9, "int8": 1978.9, "fp64": 67.0}


_GPUS: dict[str, Target] = {
    t.name: t
    for t in (
        _gpu(
            "a100",
            "NVIDIA A100 SXM4 80GB",
            {"fp32": 19.5, "tf32": 156.0, "fp16": 312.0, "bf16": 312.0, "int8": 624.0, "fp64": 19.5},
            2039.0,
            80.0,
            108,
            164.0,
            40.0,
            "8.0",
            _A100,
            _AMPERE_WP,
            f"{_DENSE} No FP8 tensor cores. fp64 is the FP64 tensor-core rate (CUDA cores: 9.7).",
        ),
        _gpu(
            "h100",
            "NVIDIA H100 SXM5 80GB",
            _hopper(),
            3350.0,
            80.0,
            132,
            228.0,
            50.0,
            "9.0",
            _H100,
            _HOPPER_WP,
            f"{_DENSE} fp64 is the FP64 tensor-core rate (CUDA cores: 34). H100 PCIe and NVL parts differ.",
        ),
        _gpu(
            "h200",
            "NVIDIA H200 SXM 141GB",
            _hopper(),
            4800.0,
            141.0,
            132,
            228.0,
            50.0,
            "9.0",
            _H200,
            f"{_HOPPER_WP} (the H100 SXM5 configuration of GH100)",
            f"{_DENSE} The H100 SXM5 chip with HBM3e memory. fp64 is the FP64 tensor-core rate.",
        ),
        _gpu(
            "l4",
            "NVIDIA L4",
            {"fp32": 30.3, "tf32": 60.0, "fp16": 121.0, "bf16": 121.0, "fp8": 242.5, "int8": 242.5, "fp64": 30.3 / 64},
            300.0,
            24.0,
            58,
            100.0,
            48.0,
            "8.9",
            _L4,
            _RUNTIME,
            _DENSE,
            {"peak_tflops.fp64": _ADA_FP64, "shared_mem_per_sm_kb": _CUDA_SPECS},
        ),
        _gpu(
            "l40s",
            "NVIDIA L40S",
            {
                "fp32": 91.6,
                "tf32": 183.0,
                "fp16": 362.05,
                "bf16": 362.05,
                "fp8": 733.0,
                "int8": 733.0,
                "fp64": 91.6 / 64,
            },
            864.0,
            48.0,
            142,
            100.0,
            96.0,
            "8.9",
            _L40S,
            _RUNTIME,
            _DENSE,
            {
                "peak_tflops.fp64": _ADA_FP64,
                "shared_mem_per_sm_kb": _CUDA_SPECS,
                "sms": f"{_L40S} (derived: 142 RT cores, one per Ada SM: {_ADA_WP})",
            },
        ),
        # GeForce tensor cores run FP32 accumulation at half rate: fp16 and fp8 take the FP16-accumulate rates so the
        # bound stays a lower bound. BF16 accumulates in FP32 only.
        _gpu(
            "rtx4090",
            "NVIDIA GeForce RTX 4090",
            {"fp32": 82.6, "tf32": 82.6, "fp16": 330.3, "bf16": 165.2, "fp8": 660.6, "int8": 660.6, "fp64": 82.6 / 64},
            1008.0,
            24.0,
            128,
            100.0,
            72.0,
            "8.9",
            _ADA_WP,
            _ADA_WP,
            f"{_DENSE} fp16 and fp8 are the FP16-accumulate rates; FP32 accumulation halves them (165.2, 330.3).",
            {"peak_tflops.fp64": _ADA_FP64, "shared_mem_per_sm_kb": _CUDA_SPECS, "memory_gb": _RTX4090},
        ),
    )
}

# Normalised spellings (lower case, letters and digits only, no vendor prefix) -> catalog name.
_ALIASES = {
    "cpu": "cpu",
    "host": "cpu",
    "localcpu": "cpu",
    "a100": "a100",
    "a100sxm": "a100",
    "a100sxm4": "a100",
    "a10080gb": "a100",
    "a100sxm480gb": "a100",
    "h100": "h100",
    "h100sxm": "h100",
    "h100sxm5": "h100",
    "h10080gb": "h100",
    "h100sxm580gb": "h100",
    "h200": "h200",
    "h200sxm": "h200",
    "h200141gb": "h200",
    "l4": "l4",
    "l40s": "l40s",
    "rtx4090": "rtx4090",
    "4090": "rtx4090",
}
# Tokens of an nvidia-smi name ("NVIDIA H100 80GB HBM3") -> catalog name. Whole tokens, so "L4" is not "L40S".
_GPU_TOKENS = {"A100": "a100", "H100": "h100", "H200": "h200", "L4": "l4", "L40S": "l40s", "4090": "rtx4090"}


def _normalize(name: str) -> str:
    return re.sub(r"^(nvidia)?(geforce)?", "", re.sub(r"[^a-z0-9]", "", name.lower()))


def _match_gpu(gpu_name: str | None) -> str | None:
    return next((_GPU_TOKENS[t] for t in re.findall(r"[A-Z0-9]+", (gpu_name or "").upper()) if t in _GPU_TOKENS), None)


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


def is_present(target: Target) -> bool:
    return target.kind == "cpu" or _match_gpu(local_gpu_name()) == target.name


def get_target(name: str) -> Target:
    """A target by name or alias, case-insensitive; "auto" is the local GPU if the catalog has it, else the CPU."""
    key = _normalize(name)
    if key == "auto":
        gpu = _match_gpu(local_gpu_name())
        return _GPUS[gpu] if gpu else _cpu_target()
    canonical = _ALIASES.get(key)
    if canonical is None:
        raise UserError(f"unknown target '{name}'; known targets: {', '.join(['cpu', *_GPUS])} (or auto)")
    return _cpu_target() if canonical == "cpu" else _GPUS[canonical]


def list_targets() -> list[Target]:
    return [_cpu_target(), *_GPUS.values()]


def _peak_tflops(target: Target, dtype: str) -> float:
    dtype = dtype.removeprefix("torch.")
    if dtype == "float32":
        keys = ("fp32", "tf32")  # tl.dot and cuBLAS may use TF32 for fp32 inputs
    elif dtype.startswith("float8"):
        keys = ("fp8",)
    elif dtype in ("int8", "uint8"):
        keys = ("int8",)  # int8 tensor cores and VNNI outrun fp32 many times over
    else:
        keys = ({"float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}.get(dtype, "fp32"),)
    found = [target.peak_tflops[k] for k in keys if k in target.peak_tflops]
    # A dtype the hardware has no units for (fp8 on an A100) is emulated: the fastest unit still bounds it.
    return max(found) if found else max(target.peak_tflops.values())


def roofline_ms(target: Target, flops: float, bytes_moved: float, dtype: str) -> float:
    """The least time a kernel doing `flops` and moving `bytes_moved` can take: max(compute time, memory time)."""
    if flops <= 0 and bytes_moved <= 0:
        return 0.0
    bandwidth = target.memory_bandwidth_gbs
    if target.kind == "cpu":
        # Timed runs repeat the call, so data that fits in the caches is served from them, not from DRAM.
        cache_mb = max(target.l3_mb or 0.0, (target.l2_mb or 0.0) * (target.cores or 1))
        if bytes_moved <= cache_mb * 2**20:
            bandwidth = max(bandwidth, cpu_cache_bandwidth_gbs())
    return max(flops / (_peak_tflops(target, dtype) * 1e9), bytes_moved / (bandwidth * 1e6))


def target_summary_rows(targets: list[Target]) -> list[dict[str, Any]]:
    """One flat row per target for `agentkern targets`: the figures that matter at a glance."""
    rows = []
    for t in targets:
        cpu = t.kind == "cpu"
        rows.append(
            {
                "name": t.name,
                "display_name": t.display_name,
                "fp32_tflops": float(f"{t.peak_tflops['fp32']:.5g}"),
                "fp16_tflops": float(f"{t.peak_tflops['fp16']:.5g}") if "fp16" in t.peak_tflops else None,
                "bandwidth_gbs": t.memory_bandwidth_gbs,
                "units": f"{t.cores} cores, {t.simd_width_bits}-bit SIMD" if cpu else f"{t.sms} SMs",
                "caches": f"L2 {t.l2_mb:g} MB/core, L3 {t.l3_mb:g} MB" if cpu else f"L2 {t.l2_mb:g} MB",
                "present": is_present(t),
            }
        )
    return rows


# ---- the CPU of this host ----

_SYS_CPU = Path("/sys/devices/system/cpu")
_DRAM_COPY_BYTES = 256 * 2**20
_CACHE_TRAFFIC_BYTES = 256 * 2**20  # per timed trial of the in-cache copy: a few ms
_MATMUL_N = 1024
_TRIALS = 4
_PAGE = 4096
_MEASURED_KEYS = {"dram_gbs", "cache_gbs", "matmul_tflops", "trials", "cache_copy_kib"}


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
    flags = set((field("flags") or field("Features") or [""])[0].split())
    # The fastest clock any source admits to: a slower one would make the compute bound beatable.
    clocks = {
        "cpufreq cpuinfo_max_freq": float(_read(_SYS_CPU / f"cpu{cpus[0]}/cpufreq/cpuinfo_max_freq") or 0) / 1e6,
        "/proc/cpuinfo cpu MHz": max((float(mhz) for mhz in field("cpu MHz")), default=0.0) / 1e3,
        "model name": float((re.findall(r"@\s*([\d.]+)\s*GHz", model) or [0])[0]),
    }
    clock_source, ghz = max(clocks.items(), key=lambda kv: kv[1])
    l2_kb, l3_kb = _cache_sizes_kb(cpus)
    mem_kb = re.findall(r"^MemTotal:\s*(\d+) kB", _read("/proc/meminfo"), re.M)
    return {
        "model": model,
        "cores": len(cpus),
        "fma": bool(flags & {"fma", "asimd"}),
        "simd_bits": 512 if "avx512f" in flags else 256 if flags & {"avx2", "avx"} else 128,
        "ghz": ghz,
        "clock_source": clock_source,
        "l2_kb": l2_kb,
        "l3_kb": l3_kb,
        "memory_gb": round(int(mem_kb[0]) / 2**20, 1) if mem_kb else None,
    }


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
    """Copy bandwidths in GB/s (bytes read + bytes written per second) and a float32 matmul rate, best of a few."""
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
    return {
        "dram_gbs": round(2 * n / dram_s / 1e9, 1),
        "cache_gbs": round(2 * m / cache_s / 1e9 * cores, 1),  # L2 is private to each core: the cores add up
        "matmul_tflops": round(2 * _MATMUL_N**3 / matmul_s / 1e12, 4),
        "trials": _TRIALS,
        "cache_copy_kib": m // 1024,
    }


def _host_measurements(facts: dict[str, Any]) -> dict[str, Any]:
    """Measured once per CPU model and core count, then read from AGENTKERN_HOME/cache/targets."""
    path = cache_dir("targets") / f"cpu-{sha256_text(facts['model'], str(facts['cores']))[:16]}.json"
    try:
        cached = json.loads(path.read_text())
        if isinstance(cached, dict) and _MEASURED_KEYS <= cached.keys():
            return cached
    except (OSError, ValueError):
        pass
    measured = {"model": facts["model"], "cores": facts["cores"], **_measure_host(facts["cores"], facts["l2_kb"])}
    try:
        atomic_write_json(path, measured)
    except OSError:  # a read-only home still gets figures, just not cached ones
        pass
    return measured


def cpu_cache_bandwidth_gbs() -> float:
    """Copy bandwidth of data that stays in the caches, all cores together (measured once, cached)."""
    return float(_host_measurements(_cpu_facts())["cache_gbs"])


def _cpu_target() -> Target:
    f = _cpu_facts()
    measured = _host_measurements(f)
    lanes = f["simd_bits"] // 32
    derived = f["cores"] * f["ghz"] * lanes * 2 * 2 / 1000
    # A VM's /proc/cpuinfo often shows the base clock, below the turbo the cores really run at: BLAS beating the
    # formula proves it, and the measured rate then takes over.
    fp32 = max(derived, measured["matmul_tflops"])
    trials = f"best of {measured['trials']}"
    half_lane = "derived: 2 x the fp32 peak (upper bound: two 16-bit values per 32-bit lane)"
    return Target(
        name="cpu",
        kind="cpu",
        display_name=f"{f['model']} ({f['cores']} cores)",
        peak_tflops={"fp32": fp32, "fp64": fp32 / 2, "fp16": fp32 * 2, "bf16": fp32 * 2, "int8": fp32 * 4},
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
                f"matmul, {trials} = {measured['matmul_tflops']:.4g}"
            ),
            "peak_tflops.fp64": "derived: half the fp32 peak (64-bit lanes)",
            "peak_tflops.fp16": half_lane,
            "peak_tflops.bf16": half_lane,
            "peak_tflops.int8": "derived: 4 x the fp32 peak (upper bound: four int8 values per 32-bit lane, VNNI)",
            "memory_bandwidth_gbs": f"measured on this host: numpy copy of 256 MiB, {trials}, read + write bytes",
            "memory_gb": "/proc/meminfo MemTotal",
            "cores": "os.sched_getaffinity (logical CPUs this process may use)",
            "simd_width_bits": "/proc/cpuinfo flags (avx512f: 512, avx2 or avx: 256, else 128)",
            "l2_mb": f"{_SYS_CPU}/cpu*/cache/index*/size (one core's L2)",
            "l3_mb": f"{_SYS_CPU}/cpu*/cache/index*/size (every distinct L3 of the usable cores)",
        },
        notes=(
            f"FMA: {'yes' if f['fma'] else 'no'}. In-cache copy bandwidth, all cores: {measured['cache_gbs']} GB/s "
            f"(numpy copy of {measured['cache_copy_kib']} KiB per core, {trials}); the roofline uses it when the bytes "
            "fit in the L3 or the L2s. SMT threads count as cores: an over-estimate, so the bound stays a lower bound."
        ),
    )
