"""Problem sizes: one problem file, meaningful work on a 2-core CPU and on an H100.

A problem declares module-level size constants, which its get_inputs()/get_init_inputs() read at call
time, and `SIZES = {"cpu": {...}, "gpu": {...}}` with the values for each size. Whoever loads a problem to
use it (the harness worker, the profile worker, the recogniser, the torch.compile baseline) imports it,
then calls `apply_size(module, size)`, which sets those constants. A problem without SIZES is used as is.

The parent side never imports a problem: it reads the size names from the source (`declared_sizes`) and
picks one (`choose`). No torch here.
"""

from __future__ import annotations

import ast
import types

from agentkern.errors import UserError

SIZE_NAMES = ("cpu", "gpu")
# Any problem, SIZES or not: its size constants (the module ints of 32 and more that get_inputs and
# get_init_inputs read) halved until the reference's work fits this machine: for problems written for
# large GPUs (KernelBench's), as KernelBench's issue #146 asks for smaller GPUs. harness/check_size.py.
SMALL = "small"
SMALL_FLOPS = 2e8
SMALL_BYTES = 32 * 2**20


class UnknownSize(ValueError):
    """A size the problem does not declare (raised in the worker, where the module is real)."""


def declared_sizes(tree: ast.Module) -> list[str] | None:
    """The keys of a top-level `SIZES = {...}` literal, in order; None when there is no such literal (a problem
    without sizes, or one that computes SIZES: then only the worker can check the name)."""
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == "SIZES" for t in targets) and isinstance(node.value, ast.Dict):
            keys = [k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            return keys if len(keys) == len(node.value.keys) else None
    return None


def default_size(target, present: bool) -> tuple[str, str | None]:
    """(size, note) a target picks when --size is not given. A GPU target whose GPU is absent runs its
    candidates in the Triton interpreter on this CPU, which is far too slow for gpu sizes: it starts from the
    cpu sizes, which the judge shrinks further for the check (harness/check_size.py), and predicts at the gpu
    size (harness/gpu_plan.py); the note says so."""
    if target.kind == "cpu":
        return "cpu", None
    if present:
        return "gpu", None
    return "cpu", (
        f"no {target.display_name} on this machine: correctness is checked in the Triton interpreter at a "
        "small size, the figures are predicted at the problem's gpu size"
    )


def choose(
    requested: str | None, target, present: bool, declared: list[str] | None, problem_name: str = "the problem"
) -> tuple[str | None, str | None]:
    """(size to apply, note for the output). None: the problem has no SIZES and is used as is.
    An unknown explicit size is a UserError, naming the sizes the problem has."""
    if requested == SMALL:
        return SMALL, None
    if declared is None:
        if requested is not None and requested not in SIZE_NAMES:
            raise UserError(f"--size must be one of {', '.join((*SIZE_NAMES, SMALL))}, not {requested!r}")
        return requested, None  # no literal SIZES: used as is (the worker checks a computed SIZES)
    if requested is not None:
        if requested not in declared:
            raise UserError(
                f"{problem_name} has no size {requested!r} (its SIZES declare {', '.join(declared) or 'none'})"
            )
        return requested, None
    size, note = default_size(target, present)
    if size not in declared:
        return None, f"{problem_name} declares no {size} size ({', '.join(declared)}): used as written"
    return size, note


def apply_size(module: types.ModuleType, size: str | None) -> dict:
    """Set the problem module's size constants for `size`; returns what was set ({} when nothing was)."""
    if size == SMALL:
        from agentkern.harness.check_size import shrink

        return shrink(module, SMALL_FLOPS, SMALL_BYTES)
    sizes = getattr(module, "SIZES", None)
    if size is None or sizes is None:
        return {}
    if not isinstance(sizes, dict) or size not in sizes:
        known = ", ".join(map(str, sizes)) if isinstance(sizes, dict) else "none"
        raise UnknownSize(f"the problem has no size {size!r} (its SIZES declare {known})")
    values = dict(sizes[size])
    for name, value in values.items():
        setattr(module, name, value)
    return values
