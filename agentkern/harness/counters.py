"""Hardware counters for the profiler: `perf stat` on a CPU, Nsight Compute (`ncu`) on a GPU.

The critic needs more than a time to name a bottleneck. Counters are collected for a kernel that already
passed the harness, in a separate sandboxed worker (mode "profile": load, warm up, then run the kernel a few
times with counting switched on only around those calls), so the import, the build and the correctness
checks never show up in the figures:
- perf: `perf stat --delay=-1 --control fifo:CTL,ACK` starts disabled; the worker writes "enable" and
  "disable" to the fifo around its loop;
- ncu: `--profile-from-start off`; the worker brackets its loop with cudaProfilerStart/Stop.
Machines that do not expose counters (most VMs say `<not supported>` to perf) get an explicit
"unavailable" with the reason, never made-up numbers.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import os
import shutil
import subprocess
from pathlib import Path

# Software events count on any Linux, VMs included; the hardware ones need a PMU the kernel exposes.
PERF_SOFTWARE = ("task-clock", "context-switches", "cpu-migrations", "page-faults")
PERF_EVENTS = PERF_SOFTWARE + (
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branch-misses",
    "L1-dcache-loads",
    "L1-dcache-load-misses",
    "LLC-loads",
    "LLC-load-misses",
)
NCU_METRICS = {
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed": "l2_throughput_pct",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": "tensor_pipe_active_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
}
STALLS = (
    "long_scoreboard",
    "short_scoreboard",
    "barrier",
    "mio_throttle",
    "lg_throttle",
    "math_pipe_throttle",
    "wait",
    "not_selected",
    "membar",
    "drain",
    "imc_miss",
    "no_instruction",
    "branch_resolving",
)
NCU_METRICS |= {f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio": f"stall_{s}" for s in STALLS}


# ---- perf ----------------------------------------------------------------------------------------------
def parse_perf_csv(text: str) -> dict:
    """`perf stat -x,` lines (value,unit,event,run time,percentage,...) -> {event: value}; unsupported and
    not-counted events are left out and listed."""
    values, missing = {}, []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 3:
            continue
        value, event = fields[0].strip(), fields[2].strip()
        if value.startswith("<"):  # <not supported> / <not counted>
            missing.append(event)
            continue
        try:
            values[event] = float(value)
        except ValueError:
            missing.append(event)
    return {"values": values, "missing": missing}


def derive_cpu(values: dict, loop_ms: float | None = None, calls: int = 1) -> dict:
    """The ratios a critic can act on."""
    out = dict(values)
    if loop_ms and values.get("task-clock"):  # perf reports task-clock in milliseconds of CPU time
        out["cpus_utilized"] = values["task-clock"] / loop_ms
    if "page-faults" in values:
        out["page_faults_per_call"] = values["page-faults"] / max(calls, 1)
    if values.get("cycles") and "instructions" in values:
        out["ipc"] = values["instructions"] / values["cycles"]
    for miss, ref, name in (
        ("cache-misses", "cache-references", "cache_miss_rate"),
        ("L1-dcache-load-misses", "L1-dcache-loads", "l1d_miss_rate"),
        ("LLC-load-misses", "LLC-loads", "llc_miss_rate"),
    ):
        if values.get(ref) and miss in values:
            out[name] = values[miss] / values[ref]
    return out


@functools.cache
def perf_unavailable_reason() -> str | None:
    """None when `perf stat` can count here (at least its software events), else why not (checked once)."""
    perf = shutil.which("perf")
    if perf is None:
        return "perf is not installed"
    try:
        proc = subprocess.run(
            [perf, "stat", "-x,", "-e", "task-clock,cycles", "true"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"perf stat failed to run ({exc})"
    parsed = parse_perf_csv(proc.stderr)
    if not parsed["values"]:
        detail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        if "paranoid" in proc.stderr:
            detail = "kernel.perf_event_paranoid forbids it (try: sysctl kernel.perf_event_paranoid=1)"
        return f"perf stat cannot count here: {detail}"
    return None


def perf_prefix(workdir: Path) -> tuple[list[str], dict]:
    """The command prefix that runs a worker under perf, counting only between its enable/disable."""
    ctl, ack = workdir / "perf.ctl", workdir / "perf.ack"
    for fifo in (ctl, ack):
        if not fifo.exists():
            os.mkfifo(fifo)
    prefix = [
        "perf",
        "stat",
        "-x,",
        "-o",
        str(workdir / "perf.csv"),
        "--delay=-1",
        f"--control=fifo:{ctl},{ack}",
        "-e",
        ",".join(PERF_EVENTS),
        "--",
    ]
    return prefix, {"perf_ctl": str(ctl), "perf_ack": str(ack)}


# ---- ncu -----------------------------------------------------------------------------------------------
def ncu_unavailable_reason() -> str | None:
    return None if shutil.which("ncu") else "Nsight Compute (ncu) is not on PATH"


def ncu_prefix(workdir: Path) -> tuple[list[str], dict]:
    prefix = [
        "ncu",
        "--csv",
        "--profile-from-start",
        "off",
        "--log-file",
        str(workdir / "ncu.csv"),
        "--metrics",
        ",".join(NCU_METRICS),
        "--target-processes",
        "all",
    ]
    return prefix, {}


def parse_ncu_csv(text: str) -> dict:
    """ncu --csv (one row per kernel and metric) -> per-metric mean over the profiled launches, the kernel
    names, and the top stall reasons."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]  # drop ncu's ==PROF== chatter
    sums: dict[str, list[float]] = {}
    kernels: set[str] = set()
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name = NCU_METRICS.get(row.get("Metric Name", ""))
        if name is None:
            continue
        kernels.add(row.get("Kernel Name", "?"))
        try:
            sums.setdefault(name, []).append(float(row["Metric Value"].replace(",", "")))
        except (KeyError, ValueError):
            continue
    values = {k: sum(v) / len(v) for k, v in sums.items()}
    stalls = sorted(
        ((k.removeprefix("stall_"), v) for k, v in values.items() if k.startswith("stall_")), key=lambda kv: -kv[1]
    )
    return {
        "values": {k: v for k, v in values.items() if not k.startswith("stall_")},
        "top_stalls": [{"reason": r, "cycles_per_issue": v} for r, v in stalls[:3] if v > 0],
        "kernels": sorted(kernels),
    }


# ---- the front door ------------------------------------------------------------------------------------
def collect(
    problem_path: str,
    solution_path: str,
    device: str,
    workdir: Path,
    env: dict,
    calls: int = 20,
    timeout_s: float = 120.0,
    size: str | None = None,
) -> dict:
    """Counters for a kernel that passed the harness: {"available": True, "tool", "values", ...} or
    {"available": False, "why": ...}. Never raises for the machine's shortcomings."""
    from agentkern.harness import confined_worker, jobs
    from agentkern.harness.device_lock import timing_lock

    reason = ncu_unavailable_reason() if device == "cuda" else perf_unavailable_reason()
    if reason:
        return {"available": False, "why": reason}
    workdir.mkdir(parents=True, exist_ok=True)
    prefix, extra = (ncu_prefix if device == "cuda" else perf_prefix)(workdir)
    request = {
        "mode": "profile",
        "problem_path": str(Path(problem_path).resolve()),
        "solution_path": str(Path(solution_path).resolve()),
        "device": device,
        "seed": 1234,
        "calls": calls,
        "size": size,
        **extra,
    }
    limits = {"compile_timeout_s": timeout_s, "run_timeout_s": timeout_s, "memory_limit_gb": 8.0}
    # A confined worker cannot reach the lock folder: this process holds the device for it.
    held = confined_worker.applies(request)
    with timing_lock(device) if held else contextlib.nullcontext():
        request["timing_lock_held"] = held
        outcome = jobs.run_job(request, workdir, env, job_limits=limits, prefix=prefix).outcome
    if outcome.result is None or outcome.result.get("status") != "ok":
        error = (outcome.result or {}).get("error") or (outcome.log or "").strip()[-300:]
        return {"available": False, "why": f"the profiling run failed: {error}"}
    report = workdir / ("ncu.csv" if device == "cuda" else "perf.csv")
    text = report.read_text(errors="replace") if report.exists() else ""
    if device == "cuda":
        parsed = parse_ncu_csv(text)
        return {
            "available": bool(parsed["values"]),
            "tool": "ncu",
            "calls": calls,
            **parsed,
            **({} if parsed["values"] else {"why": "ncu reported no metrics"}),
        }
    return _perf_counters(text, outcome.result.get("loop_ms"), calls)


def _perf_counters(text: str, loop_ms: float | None, calls: int) -> dict:
    """What perf stat's CSV says about `calls` runs of the kernel, per call."""
    parsed = parse_perf_csv(text)
    if not parsed["values"]:
        return {"available": False, "why": "perf stat counted nothing", "missing": parsed["missing"]}
    values = derive_cpu(parsed["values"], loop_ms, calls)
    note = (
        "hardware events <not supported> here (a VM without a PMU?): software events only"
        if "cycles" in parsed["missing"]
        else None
    )
    return {
        "available": True,
        "tool": "perf stat",
        "calls": calls,
        "values": values,
        "missing": parsed["missing"],
        **({"note": note} if note else {}),
    }
