"""The target catalog: GPUs as data (gpus.json: NVIDIA's published figures, each with its source; a user adds
their own under AGENTKERN_HOME/targets/), the names and aliases a user may type, and lookup. The CPU target is this host's, measured on first use (host.py); listing the names
(GPU_NAMES, TARGET_NAMES) measures nothing.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from agentkern.errors import UserError
from agentkern.targets import host
from agentkern.types import Target

CATALOG_FILE = Path(__file__).with_name("gpus.json")
USER_TARGETS = "targets"  # AGENTKERN_HOME/targets/*.json: a user's own GPUs, in the catalog's form
_FIGURES = ("peak_tflops", "memory_bandwidth_gbs", "memory_gb", "sms", "shared_mem_per_sm_kb", "l2_mb")
_REQUIRED = ("name", "display_name", "compute_capability", "peak_tflops", "memory_bandwidth_gbs", "sms")


def _entry_target(entry: dict, where: str) -> Target:
    """One catalog entry as a Target; a malformed entry is a UserError naming its file and what is wrong."""
    missing = [k for k in _REQUIRED if entry.get(k) in (None, "", {})]
    if missing:
        raise UserError(f"{where}: GPU entry {entry.get('name', '?')!r} lacks {', '.join(missing)}")
    peaks = entry["peak_tflops"]
    if (
        not isinstance(peaks, dict)
        or "fp32" not in peaks
        or not all(isinstance(v, (int, float)) and v > 0 for v in peaks.values())
    ):
        raise UserError(f"{where}: {entry['name']}: peak_tflops must map dtypes (fp32 at least) to positive TFLOP/s")
    try:
        return Target(
            name=str(entry["name"]).lower(),
            kind="gpu",
            display_name=str(entry["display_name"]),
            peak_tflops={str(k): float(v) for k, v in peaks.items()},
            memory_bandwidth_gbs=float(entry["memory_bandwidth_gbs"]),
            memory_gb=_number(entry.get("memory_gb")),
            sms=int(entry["sms"]),
            shared_mem_per_sm_kb=_number(entry.get("shared_mem_per_sm_kb")),
            l2_mb=_number(entry.get("l2_mb")),
            compute_capability=str(entry["compute_capability"]),
            sources={str(k): str(v) for k, v in (entry.get("sources") or {}).items()},
            notes=str(entry.get("notes", "")),
        )
    except (TypeError, ValueError) as exc:
        raise UserError(f"{where}: {entry['name']}: {exc}") from None


def _number(value) -> float | None:
    return None if value is None else float(value)


def _load_file(path: Path) -> list[dict]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read the GPU catalog {path}: {exc}") from None
    gpus = data.get("gpus") if isinstance(data, dict) else None
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        raise UserError(f'{path}: expected {{"gpus": [{{...}}, ...]}} (see docs/targets.md)')
    return gpus


def _catalog() -> tuple[dict[str, Target], dict[str, str], dict[str, str]]:
    from agentkern.config import home

    folder = home() / USER_TARGETS
    files = tuple(sorted(folder.glob("*.json"))) if folder.is_dir() else ()
    return _catalog_of(tuple((f, f.stat().st_mtime_ns) for f in files))


@functools.lru_cache(maxsize=8)
def _catalog_of(user_files: tuple) -> tuple[dict[str, Target], dict[str, str], dict[str, str]]:
    """(name -> Target, alias -> name, nvidia-smi token -> name): the shipped file, then the user's files (a
    user's entry with a shipped name replaces it)."""
    gpus: dict[str, Target] = {}
    aliases: dict[str, str] = {"cpu": "cpu", "host": "cpu", "localcpu": "cpu"}
    tokens: dict[str, str] = {}
    for path in [CATALOG_FILE, *(f for f, _ in user_files)]:
        for entry in _load_file(path):
            target = _entry_target(entry, str(path))
            if target.name in ("cpu", "auto"):
                raise UserError(f"{path}: a GPU cannot be called {target.name!r}")
            gpus[target.name] = target
            for alias in [target.name, *entry.get("aliases", [])]:
                aliases[_normalize(str(alias))] = target.name
            for token in entry.get("nvidia_smi_tokens", []):
                tokens[str(token).upper()] = target.name
    return gpus, aliases, tokens


def _normalize(name: str) -> str:
    return re.sub(r"^(nvidia)?(geforce)?", "", re.sub(r"[^a-z0-9]", "", name.lower()))


def _match_gpu(gpu_name: str | None) -> str | None:
    tokens = _catalog()[2]
    return next((tokens[t] for t in re.findall(r"[A-Z0-9]+", (gpu_name or "").upper()) if t in tokens), None)


def gpu_names() -> tuple[str, ...]:
    """Every GPU's name, shipped and the user's, in catalog order."""
    return tuple(_catalog()[0])


# The shipped catalog's names: what the knowledge base tags documents with (a user's GPUs are added at run time).
GPU_NAMES: tuple[str, ...] = tuple(entry["name"] for entry in json.loads(CATALOG_FILE.read_text())["gpus"])
TARGET_NAMES: tuple[str, ...] = ("cpu", *GPU_NAMES)


def is_present(target: Target) -> bool:
    return target.kind == "cpu" or _match_gpu(host.local_gpu_name()) == target.name


def measured_on(target: Target) -> str | None:
    """The machine a target's times are measured on, for recorded figures: this CPU's description (model, ISA
    level, cores, caches) for the CPU, the local GPU's name for a GPU that is here, else None (the times of a
    GPU that is not here are predicted)."""
    if target.kind == "cpu":
        return host.cpu_description()
    return host.local_gpu_name() if is_present(target) else None


def get_target(name: str) -> Target:
    """A target by name or alias, case-insensitive; "auto" is the local GPU if the catalog has it, else the CPU."""
    gpus, aliases, _ = _catalog()
    key = _normalize(name)
    if key == "auto":
        gpu = _match_gpu(host.local_gpu_name())
        return gpus[gpu] if gpu else host.cpu_target()
    canonical = aliases.get(key)
    if canonical is None:
        raise UserError(f"unknown target '{name}'; known targets: cpu, {', '.join(gpus)} (or auto)")
    return host.cpu_target() if canonical == "cpu" else gpus[canonical]


def list_targets() -> list[Target]:
    return [host.cpu_target(), *_catalog()[0].values()]


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
                "caches": f"L2 {t.l2_mb:g} MB/core, L3 {t.l3_mb:g} MB" if cpu else _l2(t),
                "present": is_present(t),
            }
        )
    return rows


def _l2(t: Target) -> str:
    return f"L2 {t.l2_mb:g} MB" if t.l2_mb else "L2 not published"
