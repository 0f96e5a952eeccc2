"""Pieces the benchmark scripts share (run as `python benchmarks/NAME.py`: this folder is on sys.path)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def load_module(path: Path, name: str):
    """Import the Python file at `path` as module `name` (a problem or a kernel file)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def render_builtin(problem_path: Path, out: Path, params: dict | None = None) -> tuple[str, dict]:
    """Write the built-in policy's C++ kernel for the problem to `out`, with the template's defaults for this
    host's ISA (as the loop picks them, loop/run.py) updated by `params`; returns (family, parameters)."""
    from agentkern.policies.builtin import templates
    from agentkern.policies.builtin.recognize import analyze
    from agentkern.targets.host import cpu_target

    spec = analyze(str(problem_path))
    target = cpu_target()
    features = templates.host_features(target.simd_width_bits, "amx_bf16" in target.peak_tflops)
    chosen = dict(templates.default_params(spec["family"], "cpp", features))
    chosen.update({k: v for k, v in (params or {}).items() if k in chosen})
    out.write_text(templates.render(spec, chosen, "cpp"))
    return spec["family"], chosen
