"""The target catalog: NVIDIA's published GPU figures (each with its source URL), the names and aliases a
user may type, and lookup. The CPU target is this host's, measured on first use (host.py); listing the names
(GPU_NAMES, TARGET_NAMES) measures nothing.
"""

from __future__ import annotations

import re
from typing import Any

from agentkern.errors import UserError
from agentkern.targets import host
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


# The catalog's names, in its order: what `--target` takes (besides aliases and "auto") and what the knowledge
# base tags documents with.
GPU_NAMES: tuple[str, ...] = tuple(_GPUS)
TARGET_NAMES: tuple[str, ...] = ("cpu", *GPU_NAMES)


def is_present(target: Target) -> bool:
    return target.kind == "cpu" or _match_gpu(host.local_gpu_name()) == target.name


def get_target(name: str) -> Target:
    """A target by name or alias, case-insensitive; "auto" is the local GPU if the catalog has it, else the CPU."""
    key = _normalize(name)
    if key == "auto":
        gpu = _match_gpu(host.local_gpu_name())
        return _GPUS[gpu] if gpu else host.cpu_target()
    canonical = _ALIASES.get(key)
    if canonical is None:
        raise UserError(f"unknown target '{name}'; known targets: {', '.join(TARGET_NAMES)} (or auto)")
    return host.cpu_target() if canonical == "cpu" else _GPUS[canonical]


def list_targets() -> list[Target]:
    return [host.cpu_target(), *_GPUS.values()]


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
