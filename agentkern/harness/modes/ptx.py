"""CUDA kernels on a machine without a GPU: compile them with nvcc to a cubin for the target's architecture,
read its resources (registers, spills, static shared memory, tensor-core and async-copy instructions), refuse
one that could not launch there, and say that is all we did.

The CUDA source lives in the candidate as arguments to `load_inline(cuda_sources=...)`, often built at
import time, so it is captured by running the candidate in the sandbox with load_inline replaced by a
recorder. The verdict is "unverified": it compiled (or not), it was not run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from agentkern.helpers import one_line
from agentkern.types import EvalOptions, EvalResult, Target


class _Captured(Exception):
    pass


def capture_cuda_sources(request: dict, phase=None) -> dict:
    """Worker side: import the candidate with load_inline recording its sources instead of building."""
    import torch.utils.cpp_extension as ext

    from agentkern.harness.loading import load_module

    captured: list[dict] = []

    def record(name, cpp_sources, cuda_sources=None, *args, **kwargs):
        as_list = lambda s: [s] if isinstance(s, str) else list(s or [])  # noqa: E731
        captured.append(
            {
                "name": name,
                "cpp_sources": as_list(cpp_sources),
                "cuda_sources": as_list(cuda_sources),
                "extra_cuda_cflags": list(kwargs.get("extra_cuda_cflags") or []),
            }
        )
        raise _Captured()

    ext.load_inline = record
    try:
        module = load_module(request["solution_path"], "agentkern_candidate")
        init = load_module(request["problem_path"], "agentkern_reference", register=False).get_init_inputs()
        module.ModelNew(*init)  # some candidates build in __init__
    except _Captured:
        pass
    return {"status": "ok", "correct": False, "captured": captured, "include_paths": ext.include_paths()}


MISSING_HEADER = re.compile(r"fatal error: (\S+): No such file")

# The one header a CPU build of torch lacks for compiling its CUDA headers: CMake generates it, and in a
# CUDA build it only says how c10_cuda was linked.
CMAKE_MACROS = "#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n"


def _stub_headers(workdir: Path) -> Path:
    stub = workdir / "stub_include"
    header = stub / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
    header.parent.mkdir(parents=True, exist_ok=True)
    header.write_text(CMAKE_MACROS)
    return stub


def compile_check(sol, target: Target, base: dict, opts: EvalOptions) -> EvalResult:
    """Parent side: capture the sources in the sandbox, then nvcc -cubin each for the target's arch."""
    from agentkern.harness import jobs

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return EvalResult(
            "unverified",
            False,
            error="no CUDA device and no nvcc here: the kernel was neither built nor run",
            details=base,
        )
    workdir = jobs.work_folder("evals", sol.path.stem)
    request = {"mode": "cuda_sources", "solution_path": str(sol.path), "problem_path": base["problem"]}
    job = jobs.run_job(request, workdir, jobs.env("cpu", "cuda", opts.threads, workdir), opts)
    captured = jobs.verdict_of(job, base)
    if job.outcome.result is None or captured.status != "ok":
        return captured
    raw = job.outcome.result
    if not raw["captured"]:
        return EvalResult(
            "unverified", False, error="no load_inline(cuda_sources=...) call found to compile", details=base
        )
    from agentkern.harness.cubin import describe_cubin
    from agentkern.targets import gpu_arch

    arch_limits = gpu_arch.arch_of(target)
    arch = arch_limits.ptx_arch if arch_limits else "sm_" + (target.compute_capability or "8.0").replace(".", "")
    includes = [f"-I{p}" for p in raw["include_paths"]] + [f"-I{_stub_headers(workdir)}"]
    checked, kernels = [], []
    for i, unit in enumerate(raw["captured"]):
        src = workdir / f"{unit['name']}_{i}.cu"
        failed = _nvcc_cubin(nvcc, arch, includes, unit, src, base, opts)
        if failed is not None:
            return failed
        checked.append(src.with_suffix(".cubin").name)
        kernels += describe_cubin(src.with_suffix(".cubin"))
    shutil.rmtree(workdir, ignore_errors=True)
    compiled = {"arch": arch, "kernels": kernels, "source": "nvcc -cubin (static shared memory only)"}
    details = {**base, "compile_check": f"nvcc -cubin -arch={arch} passed", "units": checked, "compiled": compiled}
    refused = _cannot_launch(kernels, arch_limits, target)
    if refused:
        return EvalResult(
            "compile_error", False, error=refused, details={**details, "rejected_because": "cannot_launch_on_target"}
        )
    return EvalResult("unverified", False, error=f"compiled for {arch}; not run: no CUDA device here", details=details)


def _cannot_launch(kernels: list[dict], arch_limits, target: Target) -> str | None:
    """A kernel whose static shared memory or registers exceed what one block may have on the target."""
    from agentkern.targets import gpu_arch

    if arch_limits is None:
        return None
    for k in kernels:
        res = gpu_arch.Resources(k["registers"], k["shared_bytes"], 32, k["spill_bytes"])  # threads: set at launch
        why = gpu_arch.launch_refusal(arch_limits, res, target.display_name)
        if why:
            return f"{k['kernel']} cannot launch on {target.display_name}: {why}"
    return None


def _nvcc_cubin(nvcc: str, arch: str, includes: list[str], unit: dict, src: Path, base: dict, opts: EvalOptions):
    """Compile one captured unit to a cubin: None when it compiled, else the verdict that says why not."""
    src.write_text("\n".join(unit["cuda_sources"]))
    cubin = str(src.with_suffix(".cubin"))
    cmd = [nvcc, "-cubin", f"-arch={arch}", "-std=c++17", *includes, *unit["extra_cuda_cflags"], str(src), "-o", cubin]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=opts.compile_timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return EvalResult("timeout", False, error=f"nvcc took longer than {opts.compile_timeout_s:g} s", details=base)
    if proc.returncode == 0:
        return None
    log = {**base, "nvcc_log": proc.stderr[-4000:]}
    missing = MISSING_HEADER.search(proc.stderr)
    if missing:
        why = f"cannot compile-check here: header {missing.group(1)} is not in this torch build"
        return EvalResult("unverified", False, error=why, details=log)
    first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr)
    return EvalResult("compile_error", False, error=one_line(first), details=log)
