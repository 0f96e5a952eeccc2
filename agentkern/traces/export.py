"""`agentkern traces export RUN --format module|kernelbench|jsonl --out DIR`: a run's results in forms other
tools take. `module`: the best kernel as an importable module with a plain function, a torch.library custom
op and a pytest file against the reference; `kernelbench`: KernelBench's layout; `jsonl`: see jsonl.py."""

from __future__ import annotations

import ast
import json
import keyword
import re
import shutil
from pathlib import Path

from agentkern import backends
from agentkern.errors import UserError
from agentkern.helpers import atomic_write_text, parse_python
from agentkern.traces import describe, jsonl, probe
from agentkern.traces.templating import render
from agentkern.traces.trace import RunTrace, source_of
from agentkern.types import EvalOptions, StoredCandidate

KERNELBENCH_LEVEL = 1  # the shipped problems are single operators, KernelBench's level 1
KERNELBENCH_PROBLEM_ID = 1
CUSTOM_OP_TYPES = {"tensor": "_export_torch.Tensor", "int": "int", "float": "float", "bool": "bool"}


def identifier(name: str) -> str:
    """A Python identifier from a problem's name: "matmul-bf16" -> "matmul_bf16", "2mm" -> "op_2mm"."""
    out = re.sub(r"\W", "_", name).strip("_") or "kernel"
    return f"op_{out}" if out[0].isdigit() or keyword.iskeyword(out) else out


def run_size(trace: RunTrace, candidate: StoredCandidate) -> str | None:
    """The problem size the run evaluated at: the harness's report says; the stored options only say what
    was asked (None: the target picked)."""
    return ((candidate.get("correctness") or {}).get("size")) or trace.run["options"].get("size")


def _best_with_code(trace: RunTrace) -> tuple[dict, str]:
    best = trace.best
    if best is None:
        raise UserError(f"run {trace.run_id} has no correct candidate to export")
    code = source_of(best)
    if not code:
        raise UserError(
            f"run {trace.run_id}: the code of its best candidate {best['id']} is gone "
            f"(not in the store, and {best.get('path')} does not exist)"
        )
    return best, code


def _problem_file(trace: RunTrace) -> Path:
    path = Path(trace.run["problem"] or "")
    if not path.is_file():
        raise UserError(f"run {trace.run_id}: its problem file {path} does not exist any more")
    return path


def _free_name(name: str, code: str) -> str:
    """`name`, or `run_<name>` when the kernel's module already defines it (a Triton kernel called softmax)."""
    try:
        tree = parse_python(code)
    except SyntaxError:
        return name
    taken = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}
    taken |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    return name if name not in taken else f"run_{name}"


def _custom_op_reason(shape: dict) -> str | None:
    """Why no custom op can be registered (None: it can)."""
    if not shape["arg_names"]:
        return "forward takes *args or a different number of inputs than get_inputs() gives: no op schema"
    bad = sorted({k for k in shape["arg_kinds"] if k not in CUSTOM_OP_TYPES})
    if bad:
        return f"inputs of kind {', '.join(bad)} have no torch.library schema type here"
    if shape["output"] != "tensor" and not shape["output"].startswith("tuple:"):
        return f"forward returns a {shape['output']}, not tensors"
    if shape["init_inputs"] is None:
        return "the problem's get_init_inputs() is not plain data"
    return None


def export_module(trace: RunTrace, out_dir: Path) -> list[Path]:
    best, code = _best_with_code(trace)
    problem = _problem_file(trace)
    size = run_size(trace, best)
    shape = probe.probe(problem, size)
    name = identifier(trace.problem_name)
    module, reference_module = f"{name}_kernel", f"{name}_reference"
    function = _free_name(name, code)
    variadic = not shape["arg_names"]  # forward(*args), or names that do not match get_inputs()
    args = ["*inputs"] if variadic else shape["arg_names"]
    outputs = shape["output"]
    context = {
        "run_id": trace.run_id,
        "candidate_id": best["id"],
        "strategy": best["strategy"],
        "result": describe.speedup_text(best),
        "target": trace.run["target"],
        "backend": trace.run["backend"],
        "needs_gpu": trace.run["backend"] in backends.names()
        and backends.get(trace.run["backend"]).device_kind == "gpu",
        "size": size,
        "module": module,
        "reference_module": reference_module,
        "function": function,
        "signature": ", ".join(args),
        "call_args": ", ".join(args),
        "inputs_tuple": "inputs" if variadic else f"({', '.join(args)},)",
        "typed_signature": ", ".join(
            f"{a}: {CUSTOM_OP_TYPES.get(k, 'object')}" for a, k in zip(args, shape["arg_kinds"])
        ),
        "return_type": "_export_torch.Tensor"
        if outputs == "tensor"
        else f"tuple[{', '.join(['_export_torch.Tensor'] * int(outputs.split(':')[1]))}]"
        if outputs.startswith("tuple:")
        else "object",
        "custom_op_reason": _custom_op_reason(shape),
        "init_inputs": repr(shape["init_inputs"]),
        "tolerances": EvalOptions().tolerances,
        "problem_path": str(problem),
        "needs_agentkern": "agentkern" in code,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        out_dir / f"{module}.py": code.rstrip("\n") + "\n" + render("export/module_api.py.j2", **context),
        out_dir / f"test_{module}.py": render("export/test_module.py.j2", **context),
        out_dir / "README.md": render("export/module_README.md.j2", **context),
    }
    for path, text in files.items():
        atomic_write_text(path, text)
    shutil.copyfile(problem, out_dir / f"{reference_module}.py")
    return sorted([*files, out_dir / f"{reference_module}.py"])


def export_kernelbench(trace: RunTrace, out_dir: Path) -> list[Path]:
    best, _ = _best_with_code(trace)
    problem = _problem_file(trace)
    level, pid = KERNELBENCH_LEVEL, KERNELBENCH_PROBLEM_ID
    problem_file = Path("KernelBench") / f"level{level}" / f"{pid}_{identifier(trace.problem_name)}.py"
    run_dir = out_dir / "runs" / trace.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / problem_file).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(problem, out_dir / problem_file)
    written = [out_dir / problem_file]
    # Sample 0 is the best kernel: KernelBench's scripts look at sample 0 unless told to take more.
    ordered = [best] + [c for c in trace.candidates if c["id"] != best["id"] and source_of(c)]
    samples, results = [], []
    for sample_id, cand in enumerate(ordered):
        path = run_dir / f"level_{level}_problem_{pid}_sample_{sample_id}_kernel.py"
        atomic_write_text(path, source_of(cand))
        written.append(path)
        samples.append(
            {
                "sample_id": sample_id,
                "candidate": cand["id"],
                "status": cand["status"],
                "speedup": describe.speedup_text(cand) if cand["correct"] else "-",
            }
        )
        results.append(_kernelbench_result(trace, sample_id, cand))
    results_path = run_dir / "eval_results.json"
    atomic_write_text(results_path, json.dumps({str(pid): results}, indent=2) + "\n")
    readme = out_dir / "README.md"
    atomic_write_text(
        readme,
        render(
            "export/kernelbench_README.md.j2",
            run_id=trace.run_id,
            problem_file=str(problem_file),
            problem_path=str(problem),
            size=run_size(trace, best),
            best_id=best["id"],
            best_result=describe.speedup_text(best),
            samples=samples,
            target=trace.run["target"],
            predicted=any(c["predicted"] for c in ordered),
            level=level,
            needs_agentkern=any("agentkern" in (source_of(c) or "") for c in ordered),
        ),
    )
    return sorted([*written, results_path, readme])


def _kernelbench_result(trace: RunTrace, sample_id: int, cand: StoredCandidate) -> dict:
    """One entry of KernelBench's eval_results.json; runtime in ms, -1.0 when there is none (as KernelBench)."""
    stats = ((cand.get("timing") or {}).get("timing") or {}).get("kernel") or {}
    return {
        "sample_id": sample_id,
        "compiled": cand["status"] not in ("compile_error", "no_code"),
        "correctness": cand["correct"],
        "metadata": {
            "agentkern_candidate": cand["id"],
            "status": cand["status"],
            "error": cand.get("error"),
            "speedup": cand.get("speedup"),
            "reference_ms": cand.get("reference_ms"),
            "predicted": cand["predicted"],
            "hardware": trace.run["target"],
            "strategy": cand["strategy"],
        },
        "runtime": cand["kernel_ms"] if cand["correct"] and cand.get("kernel_ms") is not None else -1.0,
        "runtime_stats": {
            "mean": stats["mean_ms"],
            "std": stats["stdev_ms"],
            "min": stats["min_ms"],
            "median": stats["median_ms"],
            "num_trials": stats["calls"],
        }
        if stats
        else {},
    }


EXPORTERS = {"module": export_module, "kernelbench": export_kernelbench, "jsonl": jsonl.write}
