"""What an exported module needs to know about its problem: the constructor arguments at the run's size,
the names and kinds of forward's arguments, and what forward returns.

Run as a subprocess (`python -m agentkern.traces.probe PROBLEM SIZE`) so the CLI never imports torch or the
problem's code itself, as the harness never does in the parent process.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import subprocess
import sys
from pathlib import Path

from agentkern.errors import UserError

PROBE_TIMEOUT_S = 300.0
SCALARS = (bool, int, float, str, type(None))


def probe(problem: Path, size: str | None) -> dict:
    """{init_inputs (list, or None when not plain data), arg_names, arg_kinds, output ("tensor", "tuple:N",
    or a type name)}. A problem that cannot be imported is a UserError."""
    proc = subprocess.run(
        [sys.executable, "-m", "agentkern.traces.probe", str(problem), size or ""],
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_S,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"cannot load the problem {problem}: {last}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _kind(value) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return "tensor"
    return type(value).__name__


def _plain(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return isinstance(value, SCALARS)


def _output_kind(model, inputs: list) -> str:
    """Run forward on meta tensors (shapes only, no arithmetic: instant even at gpu sizes); a problem whose
    ops have no meta kernel runs for real."""
    import torch

    try:
        meta = [x.to("meta") if isinstance(x, torch.Tensor) else x for x in inputs]
        with torch.no_grad():
            out = model.to("meta")(*meta)
    except Exception:  # noqa: BLE001 - no meta support: compute it
        with torch.no_grad():
            out = model.to("cpu")(*inputs)
    if isinstance(out, torch.Tensor):
        return "tensor"
    if isinstance(out, (tuple, list)) and out and all(isinstance(o, torch.Tensor) for o in out):
        return f"tuple:{len(out)}"
    return type(out).__name__


def main(problem_path: str, size: str) -> None:
    import torch

    from agentkern.sizes import apply_size

    spec = importlib.util.spec_from_file_location("agentkern_probed_problem", problem_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    apply_size(module, size or None)
    init_inputs = list(module.get_init_inputs())
    torch.manual_seed(0)
    inputs = list(module.get_inputs())
    params = [p for p in inspect.signature(module.Model.forward).parameters.values() if p.name != "self"]
    variadic = any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)
    names = [p.name for p in params] if not variadic and len(params) == len(inputs) else []
    print(
        json.dumps(
            {
                "init_inputs": init_inputs if _plain(init_inputs) else None,
                "arg_names": names,
                "arg_kinds": [_kind(x) for x in inputs],
                "output": _output_kind(module.Model(*init_inputs).eval(), inputs),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
