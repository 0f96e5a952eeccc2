"""Which code path of a template's kernel the problem's timed shapes take, and the parameters that path reads.

A template's kernel can branch at run time on the shapes it is called with. The GEMM (matmul/cpp.py.j2) runs a
matrix-vector product (M or N is 1) with no tiles or packing, and on a host with AMX tiles a product at least
256 rows and columns (fp32) on the tiles: neither reads the FMA path's parameters (micro, kc, mc, nc, b_block,
...), and the FMA path does not read `amx` (a skinny product, fp16 operands, a host without the tiles).
Candidates that differ only in parameters their path never reads are one kernel: the search would time it again
under another name (6-7 of a GEMM run's 8 candidates on an AMX host were one kernel: docs/bench.md, "One kernel,
one timing"), and a run's explanation would credit a parameter the kernel never read.

A template lists such paths in its JSON ("paths": name -> {"reads": [...]} or {"ignores": [...]}, and the numbers
its dispatch uses, which are rendered into the C++ from there); the rule that picks a path for a spec is here,
one per template. A path is named only where the rule is sure of it: anything it cannot tell (no host features,
shapes the spec does not give) is the general path, where every parameter counts.
"""

from __future__ import annotations

import math
from typing import Any

from agentkern.policies.builtin import templates


def gemm_dims(spec: dict) -> tuple[int, int, int, int] | None:
    """(batch, M, N, K) of a matmul, linear or bmm spec at its timed size, as the kernel's launcher computes them
    (a linear layer's leading dims are its rows); None where the spec's shapes do not say."""
    attrs, out, shapes = spec.get("attrs") or {}, spec.get("output_shape"), spec.get("input_shapes") or []
    bmm = spec.get("family") == "bmm"
    if not out or len(out) < (3 if bmm else 1) or "a" not in attrs or "b" not in attrs:
        return None
    batch = out[0] if bmm else 1
    n, m = out[-1], math.prod(out[:-1]) // max(batch, 1)
    # K from an operand the problem passes in: A is [.., M, K] ([K, M] transposed), B [K, N] ([N, K] transposed)
    for operand, k_dim in (
        (attrs["a"], -2 if attrs["a"].get("trans") else -1),
        (attrs["b"], -1 if attrs["b"].get("trans") else -2),
    ):
        index = operand.get("input")
        shape = shapes[index] if index is not None and index < len(shapes) else None
        if shape and len(shape) >= -k_dim:
            return batch, m, n, shape[k_dim]
    return None


def _gemm_path(spec: dict, params: dict[str, Any], features: frozenset | None, paths: dict[str, dict]) -> str | None:
    """The path of matmul/cpp.py.j2's `gemm` for the spec's shapes, in the order its dispatch tries them."""
    dims = gemm_dims(spec)
    if dims is None:
        return None
    _, m, n, k = dims
    dtype = spec.get("dtype")
    if "gemv" in paths and dtype == "float32" and (m == 1 or n == 1) and k > 0:
        return "gemv"
    amx = paths.get("amx")
    if (
        amx
        and params.get("amx") == 1
        and features is not None
        and "amx_bf16" in features
        and dtype in amx["min_side"]
        and not spec["attrs"]["a"].get("trans")  # the template compiles the tiles in for row-major A only
        and min(m, n) >= amx["min_side"][dtype]
        and min(m, n, k) >= amx["min_dim"]
    ):
        return "amx"
    if "fma" in paths and (features is not None or params.get("amx") != 1):
        return "fma"  # (on a host whose features are unknown, amx=1 may or may not take the tiles)
    return None


RULES = {"matmul": _gemm_path}  # template name -> its rule


def timed_path(spec: dict, params: dict[str, Any], backend: str, features: frozenset | None) -> str | None:
    """The named path (a key of the template's "paths") the kernel rendered with `params` takes at the spec's
    timed shapes on a host with `features`, or None: the general path, which reads every parameter."""
    family = spec.get("family")
    template = templates.TEMPLATE_OF.get(family or "")
    rule, paths = RULES.get(template or ""), templates.code_paths(family, backend) if template else {}
    return rule(spec, params, features, paths) if rule and paths else None


def behaviour(spec: dict, params: dict[str, Any], backend: str, features: frozenset | None) -> dict[str, Any]:
    """What tells two candidates' kernels apart at the timed shapes: the parameters their path reads (and the
    path's name), or all of them on the general path."""
    path = timed_path(spec, params, backend, features)
    if path is None:
        return dict(params)
    listed = templates.code_paths(spec["family"], backend)[path]
    read = (lambda k: k in listed["reads"]) if "reads" in listed else (lambda k: k not in listed["ignores"])
    return {"path": path, **{k: v for k, v in params.items() if read(k)}}
