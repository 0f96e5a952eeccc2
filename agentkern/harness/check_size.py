"""A small size to check a GPU kernel at in Triton's interpreter, derived from the problem itself.

The interpreter runs every program of the grid in Python: a 1024^3 GEMM with small tiles takes minutes per
call, and the loop's candidates timed out (issue 15). Correctness does not need the real size, only every
mask and edge, so when the target GPU is not here the problem's size constants (second_shape.size_constants:
the module ints its get_inputs and get_init_inputs read) are halved, those of 32 and more, until the
reference's work (meta_work.py, shapes only) is under CHECK_FLOPS and CHECK_BYTES. A size the reference
refuses (a constant that must divide another) stops the shrinking at the last one it accepted. The
prediction is made at the gpu size all the same (gpu_plan.py).
"""

from __future__ import annotations

from agentkern.harness.second_shape import read_by_inputs, set_constants, size_constants

CHECK_FLOPS = 5e7
CHECK_BYTES = 2 * 2**20
SHRINKABLE = 32  # constants below this (batch, heads, small dims) keep their value
MAX_HALVINGS = 8


def shrink(problem, max_flops: float = CHECK_FLOPS, max_bytes: float = CHECK_BYTES) -> dict[str, int]:
    """Constants for the check size (set on `problem` when returned); {} when the problem is small already.
    Also the `small` size of any problem (agentkern/sizes.py), with that size's budget."""
    from agentkern.harness.meta_work import meta_work

    first = size_constants(problem) | shape_constants(problem)
    chosen: dict[str, int] = {}
    current = dict(first)
    for _ in range(MAX_HALVINGS):
        try:
            set_constants(problem, current)
            work = meta_work(problem)
        except Exception:  # noqa: BLE001 - the reference refuses this size: keep the last one it took
            break
        if current != first:
            chosen = dict(current)
        if work["flops"] <= max_flops and work["bytes"] <= max_bytes:
            break
        smaller = {k: _halved(v) for k, v in current.items()}
        if smaller == current:
            break
        current = smaller
    set_constants(problem, chosen or first)
    return chosen


def shape_constants(problem) -> dict[str, tuple | list]:
    """Module tuples and lists of ints that get_inputs or get_init_inputs read: halved with the ints, or a shape
    that must match a halved size (a loss's targets, KernelBench's `input_shape = (32768,)`) would stop the
    halving, and a network's layer widths (`hidden_layer_sizes = [32768, 32768]`: a 4 GiB weight) would keep
    the reference too large for this machine whatever its batch."""
    read = read_by_inputs(problem)
    return {
        name: value
        for name, value in vars(problem).items()
        if name in read and isinstance(value, (tuple, list)) and value and all(type(v) is int for v in value)
    }


def _halved(value):
    if isinstance(value, (tuple, list)):
        return type(value)(v // 2 if v >= SHRINKABLE else v for v in value)
    return value // 2 if value >= SHRINKABLE else value
