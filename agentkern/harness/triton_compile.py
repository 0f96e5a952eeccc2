"""A Triton candidate compiled for the target GPU's architecture, on a machine without that GPU.

`compile_for_target(source, launches, target, folder)` (agentkern's side) reduces the candidate's file to its
jit functions (triton_source.py: the file is never run), and hands them with the recorded launches
(launch_record.py) to a fresh, confined compile process: `python -m agentkern.harness.triton_compile
REQUEST`. That process compiles each distinct launch with Triton's own compiler for the target
(`triton.compile(ASTSource(...), target=GPUTarget("cuda", arch, 32))`), reads the cubin's resource usage
with the `cuobjdump` shipped in the triton wheel, and counts the PTX instructions that decide speed
(wgmma / mma.sync / tcgen05 tensor-core ops, cp.async, TMA bulk copies). Back here, each kernel is checked
against the architecture's limits (gpu_arch.py): one that cannot launch there is refused, with the reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from agentkern.harness.triton_source import Unreducible, reduce_source
from agentkern.helpers import one_line
from agentkern.targets import gpu_arch
from agentkern.types import Target

COMPILE_TIMEOUT_S = 180.0
# The compile process runs outside the evaluation's sandbox group (no memory watch there): a kernel written to
# blow up the compiler (a huge constexpr unrolled) must not take the machine's memory or disk with it.
COMPILE_MEMORY_BYTES = 8 * 2**30
COMPILE_FILE_BYTES = 256 * 2**20
MAX_DISTINCT = 8  # distinct (kernel, types, constexprs, options) compiled per candidate
INSTRUCTIONS = {  # PTX mnemonics -> what the verdict calls them
    "wgmma": r"\bwgmma\.mma_async",
    "mma": r"\bmma\.sync",
    "tcgen05": r"\btcgen05\.mma",
    "cp_async": r"\bcp\.async\.(?:ca|cg)",
    "tma": r"\bcp\.async\.bulk\.tensor",
    "ld_global_v4": r"\bld\.global(?:\.\w+)*\.v4",
    "ex2": r"\bex2\.approx",  # exponentials between matmuls (an attention's softmax)
}
RESOURCE_LINE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


# ---- agentkern's side -----------------------------------------------------------------------------------
def compile_for_target(source: str, launches: list[dict], target: Target, folder: Path) -> dict:
    """details.compiled for a Triton candidate on a GPU target: per kernel its resources, instruction mix,
    occupancy and launch check; {"unavailable": why} where it cannot be compiled here."""
    arch = gpu_arch.arch_of(target)
    if arch is None:
        return {"unavailable": f"no architecture limits for compute capability {target.compute_capability}"}
    if not launches:
        return {"unavailable": "the candidate launched no Triton kernel in its trials"}
    try:
        reduced, kernels = reduce_source(source)
    except Unreducible as exc:
        return {"unavailable": f"its kernels cannot be compiled without running the file: {exc}"}
    folder.mkdir(parents=True, exist_ok=True)
    tuned = {launch["kernel"] for launch in launches if "alternative" in launch}
    # an autotuned kernel's own run repeats one of its configs, already noted as an alternative
    launches = [x for x in launches if "alternative" in x or x["kernel"] not in tuned]
    request = {"source": reduced, "launches": _distinct(launches, set(kernels)), "arch": arch.triton_arch}
    (folder / "request.json").write_text(json.dumps(request))
    compiled = _run_compiler(folder)
    if "unavailable" in compiled:
        return compiled
    return _checked(compiled["kernels"], launches, arch, target)


def _distinct(launches: list[dict], known: set[str]) -> list[dict]:
    seen, out = set(), []
    for launch in launches:
        key = json.dumps([launch["kernel"], launch["args"], launch["options"]], sort_keys=True)
        if launch["kernel"] in known and key not in seen and len(out) < MAX_DISTINCT:
            seen.add(key)
            out.append(launch)
    return out


def _run_compiler(folder: Path) -> dict:
    from agentkern.harness import confine

    scratch = folder.resolve()
    inside = confine.inside(scratch)
    argv = confine.command(
        [sys.executable, "-m", "agentkern.harness.triton_compile", str(inside / "request.json")], scratch
    )
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "VIRTUAL_ENV")} | {
        "HOME": str(inside),
        "TRITON_CACHE_DIR": str(inside / "triton-cache"),
        "TRITON_INTERPRET": "0",
    }
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, env=env, cwd=scratch, preexec_fn=_limits
        )
    except subprocess.TimeoutExpired:
        return {"unavailable": f"the compiler for the target took over {COMPILE_TIMEOUT_S:.0f} s"}
    result = scratch / "result.json"
    if proc.returncode != 0 or not result.is_file():
        return {"unavailable": f"the compile process failed: {one_line(proc.stderr[-2000:] or proc.stdout[-2000:])}"}
    return json.loads(result.read_text())


def _limits() -> None:
    """In the compile process, before it runs anything: address space, file size and CPU time, hard."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (COMPILE_MEMORY_BYTES, COMPILE_MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_FSIZE, (COMPILE_FILE_BYTES, COMPILE_FILE_BYTES))
    cpu = int(COMPILE_TIMEOUT_S) + 10
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _checked(kernels: list[dict], launches: list[dict], arch: gpu_arch.Arch, target: Target) -> dict:
    failed: dict[str, list[str]] = {}  # kernel -> why each of its launches fails there
    for k in kernels:
        if "unavailable" in k:
            continue
        if "error" in k:
            failed.setdefault(k["kernel"], []).append(f"does not compile for {arch.ptx_arch}: {k['error']}")
            continue
        res = gpu_arch.Resources(k["registers"], k["shared_bytes"], k["threads"], k["spill_bytes"])
        why = gpu_arch.launch_refusal(arch, res, target.display_name)
        k["blocks_per_sm"] = gpu_arch.blocks_per_sm(arch, res)
        k["occupancy"] = round(gpu_arch.occupancy(arch, res), 3)
        if why:
            k["cannot_launch"] = why
            failed.setdefault(k["kernel"], []).append(f"cannot launch on {target.display_name}: {why}")
    grids = [{"kernel": launch["kernel"], "grid": launch["grid"]} | _alternative(launch) for launch in launches]
    out = {"arch": arch.ptx_arch, "kernels": kernels, "launches": grids, "source": "compiled from the source text"}
    refused = _refused(kernels, failed)
    if refused:
        out["refused"] = refused
    return out


def _alternative(record: dict) -> dict:
    return {"alternative": record["alternative"]} if "alternative" in record else {}


def _refused(kernels: list[dict], failed: dict[str, list[str]]) -> str | None:
    """A kernel is refused when every way it would be launched fails: an autotuned kernel's configs are
    alternatives (the GPU's autotuner skips those that cannot run), any other launch must run."""
    for name, reasons in failed.items():
        mine = [k for k in kernels if k["kernel"] == name]
        if not any("alternative" in k for k in mine) or len(reasons) >= len(mine):
            return f"{name} {reasons[0]}" + (
                f" (and {len(reasons) - 1} more of its configs)" if len(reasons) > 1 else ""
            )
    return None


# ---- the compile process --------------------------------------------------------------------------------
def _signature(fn, launch: dict) -> tuple[dict, dict, dict]:
    """(signature, constexprs, attrs) as the JIT would specialise these arguments on a GPU: pointers 16-byte
    aligned (the CUDA caching allocator's blocks are), ints divisible by 16 marked so, an int equal to 1 a
    constant."""
    signature, constexprs, attrs = {}, {}, {}
    for i, name in enumerate(fn.arg_names):
        arg = launch["args"].get(name, {"none": True})
        if fn.params[i].is_constexpr:
            signature[name] = "constexpr"
            constexprs[name] = next(iter(arg.values())) if "none" not in arg else None
        elif "tensor" in arg:
            signature[name], attrs[(i,)] = "*" + arg["tensor"], [["tt.divisibility", 16]]
        elif "int" in arg and not fn.params[i].do_not_specialize and arg["int"] == 1:
            signature[name], constexprs[name] = "constexpr", 1
        elif "int" in arg:
            v = arg["int"]
            signature[name] = "i32" if -(2**31) <= v < 2**31 else "i64"
            if v % 16 == 0 and not fn.params[i].do_not_specialize:
                attrs[(i,)] = [["tt.divisibility", 16]]
        elif "bool" in arg:
            signature[name] = "i1"
        elif "float" in arg:
            signature[name] = "fp32"
        else:
            signature[name], constexprs[name] = "constexpr", None
    return signature, constexprs, attrs


def _resources(cubin: Path) -> dict:
    import triton

    cuobjdump = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    out = subprocess.run([str(cuobjdump), "-res-usage", str(cubin)], capture_output=True, text=True, timeout=60)
    match = RESOURCE_LINE.search(out.stdout)
    if match is None:
        raise RuntimeError(f"cuobjdump gave no resource line: {out.stdout[-300:]} {out.stderr[-300:]}")
    reg, stack, shared, local = map(int, match.groups())
    return {"registers": reg, "spill_bytes": max(stack, local), "static_shared_bytes": shared}


def _user_static_shared(static: int, arch: int) -> int:
    # From sm_90 on, the cubin counts the 1 KiB the system reserves per block (SHARED:1024 for a kernel that
    # declares none); the launch limits (gpu_arch.py) are for the block's own shared memory.
    return max(0, static - 1024) if arch >= 90 else static


def _our_limit(exc: BaseException) -> str | None:
    """The name-lookup error behind a compile error (the reduction left the name out), or None."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, (NameError, KeyError, AttributeError)):
            return f"{type(exc).__name__}: {exc}"
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _compile_one(namespace: dict, launch: dict, arch: int, folder: Path, index: int) -> dict:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = namespace[launch["kernel"]]
    options = {k: v for k, v in launch["options"].items() if k in ("num_warps", "num_stages", "num_ctas", "maxnreg")}
    record = {"kernel": launch["kernel"], "options": options} | _alternative(launch)
    unknown = [f"{name} ({desc['other']})" for name, desc in launch["args"].items() if "other" in desc]
    if unknown:  # a tensor descriptor, a tuple...: its type is not recorded, so it cannot be rebuilt here
        return record | {"unavailable": f"arguments of a kind not recorded: {', '.join(unknown)[:200]}"}
    try:
        signature, constexprs, attrs = _signature(fn, launch)
        compiled = triton.compile(
            ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs),
            target=GPUTarget("cuda", arch, 32),
            options=options,
        )
    except Exception as exc:  # noqa: BLE001 - the compiler's refusal is the finding
        cause = _our_limit(exc)
        if cause is not None:  # the reduced file lacks a name the kernel reads: not the kernel's fault
            return record | {"unavailable": one_line(f"the kernel reads what the file computes at run time: {cause}")}
        return record | {"error": one_line(f"{type(exc).__name__}: {exc}", 600)}
    cubin = folder / f"kernel{index}.cubin"
    cubin.write_bytes(compiled.asm["cubin"])
    (folder / f"kernel{index}.ptx").write_text(compiled.asm["ptx"])
    res = _resources(cubin)
    ptx = compiled.asm["ptx"]
    meta = compiled.metadata
    return (
        record
        | res
        | {
            "constexprs": {k: v for k, v in constexprs.items() if isinstance(v, (int, float, str, bool))},
            "threads": int(meta.num_warps) * 32 * int(getattr(meta, "num_ctas", 1) or 1),
            "num_warps": int(meta.num_warps),
            "num_stages": int(getattr(meta, "num_stages", options.get("num_stages", 3))),
            "shared_bytes": int(meta.shared) + _user_static_shared(res["static_shared_bytes"], arch),
            "instructions": {name: len(re.findall(pattern, ptx)) for name, pattern in INSTRUCTIONS.items()},
        }
    )


def main(request_path: str) -> int:
    request = json.loads(Path(request_path).read_text())
    folder = Path(request_path).parent
    namespace: dict = {"__name__": "agentkern_reduced_kernels"}
    reduced_file = folder / "kernels.py"
    reduced_file.write_text(request["source"])
    exec(compile(request["source"], str(reduced_file), "exec"), namespace)  # jit definitions only (triton_source.py)
    kernels = [
        _compile_one(namespace, launch, request["arch"], folder, i) for i, launch in enumerate(request["launches"])
    ]
    (folder / "result.json").write_text(json.dumps({"kernels": kernels}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
