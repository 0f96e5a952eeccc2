"""Runs of elementwise ops in a traced graph (graph_trace.py) fused into one kernel each, for the graph family.

Op by op, `relu(x * s + b)` is three passes over memory, two temporaries and three kernel calls. Here every
elementwise node whose tensor operand is an elementwise node read by nothing else joins that node's group;
a group (one op or several) is computed in one pass (kernels_dataset/templates/graph/kernels.cpp.j2,
`fused_<k>`): per output element, its external operands (leaves) are read through their broadcast strides and
the members evaluated in order. Each member's result is rounded to its own dtype, as the op-by-op kernels
store it, so fusing changes no value. Batch norm in inference (running statistics, only its output read)
joins too: per channel it is (x - mean) / sqrt(var + eps) * w + b, its four vectors read as [C, 1, ...].

A group whose members all compute float32 (or compare) and all have a vector form (EW_VEC) also gets a
vector body, used at run time when the innermost run of the output is one contiguous or broadcast stream per
leaf; a convolution or GEMM whose output only the group reads runs that body as its epilogue (`finished_by`).
No torch here.
"""

from __future__ import annotations

import math
import struct

from agentkern.policies.builtin.graph_ops import EW, EW_OPS, SAME_VALUES
from agentkern.policies.builtin.graph_trace import read_counts, refs

MAX_LEAVES = 8  # operands one fused kernel reads (kernels.cpp.j2's walkers keep this many offsets)

# Elementwise ops with a float32 vector form (vecmath.h.j2), over vectors {x}, {y} and broadcast parameters
# {a}, {b}: what the fused vector body computes. NaN behaves as in the double expressions of EW.
EW_VEC: dict[str, str] = {
    "copy": "{x}",
    "neg": "v_neg({x})",
    "abs": "v_abs({x})",
    "sqrt": "vsqrt({x})",
    "exp": "v_exp({x})",
    "tanh": "v_tanh({x})",
    "sigmoid": "v_sigmoid({x})",
    "silu": "v_silu({x})",
    "gelu": "v_gelu({x})",
    "gelu_tanh": "v_gelu_tanh({x})",
    "relu": "vmax(vzero(), {x})",
    "add": "vadd({x}, vmul({a}, {y}))",
    "sub": "vsub({x}, vmul({a}, {y}))",
    "mul": "vmul({x}, {y})",
    "div": "vdiv({x}, {y})",
    # max_ps / min_ps return their second operand when either is NaN: x last keeps a NaN x.
    "clamp": "vmin({b}, vmax({a}, {x}))",
    "leaky_relu": "vselect_gt0({x}, {x}, vmul({x}, {a}))",
    # comparisons as 1.0 / 0.0 (their bool results, as the double body reads them); where: x != 0 picks y
    "gt": "vblend(vcmp<_CMP_GT_OQ>({x}, {y}), vzero(), vset(1.0f))",
    "ge": "vblend(vcmp<_CMP_GE_OQ>({x}, {y}), vzero(), vset(1.0f))",
    "lt": "vblend(vcmp<_CMP_LT_OQ>({x}, {y}), vzero(), vset(1.0f))",
    "le": "vblend(vcmp<_CMP_LE_OQ>({x}, {y}), vzero(), vset(1.0f))",
    "eq": "vblend(vcmp<_CMP_EQ_OQ>({x}, {y}), vzero(), vset(1.0f))",
    "ne": "vblend(vcmp<_CMP_NEQ_UQ>({x}, {y}), vzero(), vset(1.0f))",
    "where": "vblend(vcmp<_CMP_EQ_OQ>({x}, vzero()), {y}, {z})",
    "isnan": "vblend(vcmp<_CMP_UNORD_Q>({x}, {x}), vzero(), vset(1.0f))",
    "log": "v_log({x})",
    "log1p": "v_log1p({x})",
    "reciprocal": "vdiv(vset(1.0f), {x})",
    "rsqrt": "vdiv(vset(1.0f), vsqrt({x}))",
    "erf": "v_erf({x})",
    "softplus": "v_softplus({x}, {a}, {b})",
    "mish": "v_mish({x})",
    "elu": "v_elu({x}, {a}, {b}, {c})",
    "hardswish": "vdiv(vmul({x}, vmin(vset(6.0f), vmax(vzero(), vadd({x}, vset(3.0f))))), vset(6.0f))",
    "hardsigmoid": "vmin(vset(1.0f), vmax(vzero(), vadd(vdiv({x}, vset(6.0f)), vset(0.5f))))",
    # minimum / maximum propagate a NaN of either operand (as torch's do): x + y where the pair is unordered.
    "minimum": "vblend(vcmp<_CMP_UNORD_Q>({x}, {y}), vmin({x}, {y}), vadd({x}, {y}))",
    "maximum": "vblend(vcmp<_CMP_UNORD_Q>({x}, {y}), vmax({x}, {y}), vadd({x}, {y}))",
    # fmin / fmax ignore a NaN: min_ps / max_ps already return y when x is NaN; x where y is.
    "fmin": "vblend(vcmp<_CMP_UNORD_Q>({y}, {y}), vmin({x}, {y}), {x})",
    "fmax": "vblend(vcmp<_CMP_UNORD_Q>({y}, {y}), vmax({x}, {y}), {x})",
    "floor": "vfloor({x})",
    "ceil": "vceil({x})",
    "trunc": "vtrunc({x})",
    "round": "vround({x})",  # to nearest, ties to even: std::nearbyint's default mode
    "sign": "vsub(vblend(vcmp<_CMP_GT_OQ>({x}, vzero()), vzero(), vset(1.0f)),"
    " vblend(vcmp<_CMP_LT_OQ>({x}, vzero()), vzero(), vset(1.0f)))",  # 0 for NaN, as torch's sign
    "isinf": "vblend(vcmp<_CMP_EQ_OQ>(v_abs({x}), vset(__builtin_inff())), vzero(), vset(1.0f))",
    # x != 0 is true for NaN, as in C (NEQ_UQ); == 0 false
    "logical_not": "vblend(vcmp<_CMP_EQ_OQ>({x}, vzero()), vzero(), vset(1.0f))",
    "logical_and": "vblend(vcmp<_CMP_NEQ_UQ>({x}, vzero()), vzero(), vblend(vcmp<_CMP_NEQ_UQ>({y}, vzero()), vzero(),"
    " vset(1.0f)))",
    "logical_or": "vblend(vcmp<_CMP_NEQ_UQ>({x}, vzero()), vblend(vcmp<_CMP_NEQ_UQ>({y}, vzero()), vzero(),"
    " vset(1.0f)), vset(1.0f))",
    "logical_xor": "vblend(vcmp<_CMP_NEQ_UQ>({x}, vzero()), vblend(vcmp<_CMP_NEQ_UQ>({y}, vzero()), vzero(),"
    " vset(1.0f)), vblend(vcmp<_CMP_NEQ_UQ>({y}, vzero()), vset(1.0f), vzero()))",
    # x * scale + shift, scale and shift per channel computed once per run of the channel (`uniform`).
    "batch_norm": "vfmadd({x}, vset(U[{scale}]), vset(U[{shift}]))",
}

VEC_BOOL = {
    "gt",
    "ge",
    "lt",
    "le",
    "eq",
    "ne",
    "isnan",
    "isinf",
    "logical_not",
    "logical_and",
    "logical_or",
    "logical_xor",
}  # bool results the vector body holds as 1.0 / 0.0

# pow(x, exponent) for the exponents torch's CPU kernel computes without pow (aten/src/ATen/native/cpu/
# PowKernel.cpp; 0 and 1 in Pow.cpp): (double expression, vector form). A squared difference (MSE, RMSNorm, a
# GELU's cube) is then one multiply, vectorised, not std::pow in double (~20 ns a value); other exponents keep
# std::pow and the double body.
POW_SCALAR: dict[float, tuple[str, str]] = {
    0.0: ("1.0", "vset(1.0f)"),
    1.0: ("x", "{x}"),
    2.0: ("x * x", "vmul({x}, {x})"),
    3.0: ("x * x * x", "vmul(vmul({x}, {x}), {x})"),
    0.5: ("std::sqrt(x)", "vsqrt({x})"),
    -0.5: ("1.0 / std::sqrt(x)", "vdiv(vset(1.0f), vsqrt({x}))"),
    -1.0: ("1.0 / x", "vdiv(vset(1.0f), {x})"),
    -2.0: ("1.0 / (x * x)", "vdiv(vset(1.0f), vmul({x}, {x}))"),
}
GELU = "aten.gelu.default"  # a helper of its own op by op (its `approximate` picks the expression)
BATCH_NORM_EVAL = {"aten.native_batch_norm.default", "aten._native_batch_norm_legit_no_training.default"}
# Integers up to this magnitude are exact in float32: an int64 value derived from aranges within it (the index
# grids of a triangular mask, `arange(n)[None, :] - arange(n)[:, None] >= k`) is computed in the vector body.
EXACT_IN_FLOAT32 = 2**24
_ROUND = {
    "float32": "(double)(float)({e})",
    "int64": "(double)(int64_t)({e})",
    "bool": "(({e}) != 0.0 ? 1.0 : 0.0)",
    "float64": "({e})",
}


def _f32(value: float) -> float:
    """A Python number as float32 rounds it: the op-by-op path passes scalars as 0-d float32 tensors."""
    return struct.unpack("f", struct.pack("f", value))[0] if math.isfinite(value) else value


def _batch_norm_eval(node: dict, read_whole: set[str]) -> bool:
    """A batch norm computing from running statistics, of which only item 0 (the output) is read."""
    if node["op"] not in BATCH_NORM_EVAL or node["name"] in read_whole:
        return False
    args = node.get("args", [])
    training = args[5] if node["op"] == "aten.native_batch_norm.default" and len(args) > 5 else False
    stats = args[3:5] if len(args) >= 5 else []
    return training is False and len(stats) == 2 and all(isinstance(s, dict) and "ref" in s for s in stats)


def _operands_and_params(node: dict) -> tuple[str, list, dict]:
    """(EW name, operand values in order, {param letter: value}) of an elementwise node or an eval batch norm
    (operands x, mean, var, weight, bias: a missing weight is 1, a missing bias 0)."""
    args = node.get("args", [])
    if node["op"] in BATCH_NORM_EVAL:
        eps = args[7] if node["op"] == "aten.native_batch_norm.default" else args[6]
        weight = args[1] if args[1] is not None else 1.0
        bias = args[2] if args[2] is not None else 0.0
        return "batch_norm", [args[0], args[3], args[4], weight, bias], {"a": float(eps)}
    if node["op"] == GELU:
        approximate = args[1] if len(args) > 1 else node.get("kwargs", {}).get("approximate", "none")
        return ("gelu_tanh" if approximate == "tanh" else "gelu"), [args[0]], {}
    name, positions, spec = EW_OPS[node["op"]]
    operands = [args[1]] if node["op"] == "aten.pow.Scalar" else [args[i] for i in positions]
    params = {}
    for letter, (position, keyword, default) in spec.items():
        value = args[position] if len(args) > position else node.get("kwargs", {}).get(keyword, default)
        value = default if value is None else value
        if isinstance(value, dict) and "float" in value:
            value = value["float"]
        params[letter] = float(value)
    return name, operands, params


def _dtype(node: dict, by_name: dict) -> str | None:
    """A member's result dtype: a batch norm's (traced as a tuple, no dtype of its own) is its input's."""
    if node["op"] in BATCH_NORM_EVAL:
        return by_name[node["args"][0]["ref"]].get("dtype") if _is_ref(node["args"][0]) else None
    return node.get("dtype")


def _is_ref(value) -> bool:
    return isinstance(value, dict) and "ref" in value


def _number(value) -> float | None:
    if isinstance(value, dict):
        value = value.get("float")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _arange_range(args: list, op: str) -> tuple[float, float] | None:
    """The (smallest, largest) value of an arange with constant arguments, None otherwise."""
    numbers = [_number(a) for a in args[:3]]
    if any(n is None for n in numbers):
        return None
    start, end, step = (0.0, numbers[0], 1.0) if op == "aten.arange.default" else (*numbers[:2], (numbers + [1.0])[2])
    count = math.ceil((end - start) / step) if step else 0
    if count <= 0:
        return (0.0, 0.0)
    last = start + step * (count - 1)
    return (min(start, last), max(start, last))


def int_range(name: str, by_name: dict, memo: dict | None = None) -> tuple[float, float] | None:
    """The range of int64 node `name` when it is derived from constant aranges through views, add, sub, neg,
    mul and copies, with every value on the way inside EXACT_IN_FLOAT32 (so float32 computes it exactly); None
    otherwise."""
    memo = {} if memo is None else memo
    if name in memo:
        return memo[name]
    memo[name] = None  # a cycle (never in a traced graph) ends here
    node = by_name.get(name)
    found = None
    if node is not None and node.get("dtype") == "int64":
        op, args = node["op"], node.get("args", [])
        if op.startswith("aten.arange."):
            found = _arange_range(args, op)
        elif op in SAME_VALUES and args and _is_ref(args[0]):
            found = int_range(args[0]["ref"], by_name, memo)
        elif op in EW_OPS and EW_OPS[op][0] in ("add", "sub", "neg", "mul", "copy"):
            ew, operands, params = _operands_and_params(node)
            ranges = [
                int_range(v["ref"], by_name, memo)
                if _is_ref(v)
                else (lambda n: None if n is None else (n, n))(_number(v))
                for v in operands
            ]
            if all(r is not None for r in ranges):
                found = _combined(ew, ranges, params.get("a", 1.0))
    if found is not None and max(abs(found[0]), abs(found[1])) > EXACT_IN_FLOAT32:
        found = None
    memo[name] = found
    return found


def _combined(ew: str, ranges: list, alpha: float) -> tuple[float, float]:
    if ew in ("neg", "copy"):
        lo, hi = ranges[0]
        return (-hi, -lo) if ew == "neg" else (lo, hi)
    x, y = ranges
    if ew == "mul":
        ends = [a * b for a in x for b in y]
        return (min(ends), max(ends))
    scaled = sorted([alpha * y[0], alpha * y[1]])
    if ew == "add":
        return (x[0] + scaled[0], x[1] + scaled[1])
    return (x[0] - scaled[1], x[1] - scaled[0])  # sub


def groups(plan: dict, read_whole: set[str]) -> list[dict]:
    """The plan's fused groups, in node order: {"index", "members" (node names, the root last), "root",
    "dtype", "tuple" (the root is a batch norm, read as item 0), "leaves" ([{"ref": name}, channel] pairs:
    channel leaves are read as [C, 1, ...] over the output), "params" (numbers), "scalar" (the C++ body in
    double, lines), "vector" (the float32 body, or None), "uniform" (what the vector body reads as U[i],
    computed once per run from the channel leaves' values B[k][0]), "finished_by" (the convolution or GEMM
    that computes the group as its epilogue, or None), "finished_leaf" (the leaf standing for its output: that
    node, or a view of it), "kernel" (the index of the group whose C++ kernel it calls: _share_kernels)}. A
    lone elementwise op is a group too (its kernel vectorised where the op-by-op one computes in double). `read_whole`: the nodes read other than as item 0
    (graph_render.whole_tuples_read): a batch norm among them keeps its own kernel."""
    uses = read_counts(plan["nodes"], plan["outputs"])
    by_name = {n["name"]: n for n in plan["nodes"]}
    order = {name: i for i, name in enumerate(by_name)}
    # getitem(batch norm, 0) is the batch norm's output: a member reads through it.
    item0 = {
        n["name"]: n["args"][0]["ref"]
        for n in plan["nodes"]
        if n["op"] == "getitem" and n["args"][1] == 0 and by_name[n["args"][0]["ref"]]["op"] in BATCH_NORM_EVAL
    }
    group_of: dict[str, list[str]] = {}  # member name -> its group's member list (shared)
    for node in plan["nodes"]:
        name = node["name"]
        fusable = node["op"] in EW_OPS or node["op"] == GELU or _batch_norm_eval(node, read_whole)
        if not fusable or _dtype(node, by_name) not in _ROUND:
            continue
        joined: list[list[str]] = []
        operands = _operands_and_params(node)[1]
        for value in operands[:1] if node["op"] in BATCH_NORM_EVAL else operands:  # a norm's vectors stay leaves
            if not _is_ref(value):
                continue
            ref = value["ref"]
            source = item0.get(ref, ref)
            single = uses[ref] == 1 and (ref == source or uses[source] == 1)
            if single and source in group_of and group_of[source] not in joined:
                joined.append(group_of[source])
        members = sorted([m for g in joined for m in g] + [name], key=order.__getitem__)
        if len(_leaves(members, by_name, item0)) > MAX_LEAVES:
            members = [name]
        for m in members:
            group_of[m] = members
    readers: dict[str, set[str]] = {}
    for node in plan["nodes"]:
        for ref in refs([node.get("args", []), node.get("kwargs", {})]):
            readers.setdefault(ref, set()).add(node["name"])
    outputs = set(refs(plan["outputs"]))
    _merge_read_within(group_of, readers, outputs, by_name, item0, order)
    seen, result = set(), []
    for node in plan["nodes"]:
        members = group_of.get(node["name"])
        if members is None or id(members) in seen:
            continue
        seen.add(id(members))
        group = _group(len(result), members, by_name, item0)
        group["finished_by"], group["finished_leaf"] = _epilogue_of(group, by_name, readers, outputs)
        group["reduced"] = _reduced_by(group, by_name, readers, outputs)
        group["rows_of"] = _row_epilogue_of(group, by_name, readers, outputs)
        result.append(group)
    # A reduction that sums another group (fused_<k>_sum_rows) is computed by that group's line: it cannot move.
    summing = {g["reduced"] for g in result}
    for group in result:
        if group["rows_of"] in summing:
            group["rows_of"] = None
    _share_kernels(result)
    return result


def _share_kernels(result: list[dict]) -> None:
    """Each group's "kernel": the index of the first group whose C++ is the same as its own, the one kernel
    both call (a recurrent network repeats its step's groups once a time step: a kernel each made the source
    of KernelBench L3 39_GRU 7 MB, past the harness's limit). A group another op's kernel finishes keeps its
    own: the helpers cache such a call's params per kernel."""
    first: dict[tuple, int] = {}
    for group in result:
        if group["finished_by"] or group["rows_of"]:
            key: tuple = (group["index"],)
        else:
            vector = None if group["vector"] is None else tuple(group["vector"])
            key = (
                tuple(group["scalar"]),
                vector,
                tuple(group["uniform"]),
                bool(group["reduced"]),
                len(group["leaves"]),
            )
        group["kernel"] = first.setdefault(key, group["index"])


def _merge_read_within(group_of: dict, readers: dict, outputs: set, by_name: dict, item0: dict, order: dict):
    """A group whose result only one other group reads (`d = x - y; where(|d| < 1, d * d / 2, |d| - 0.5)`, a
    Huber loss's difference read four times) joins it: the reads become the member's register, not a
    temporary written and read back. Repeated until no group joins another (each join may enable the next)."""
    joined = True
    while joined:
        joined = False
        for members in list({id(g): g for g in group_of.values()}.values()):
            root = members[-1]
            targets = {id(group_of.get(r)) for r in readers.get(root, ())}
            if root in outputs or by_name[root]["op"] in BATCH_NORM_EVAL or len(targets) != 1:
                continue
            reader = group_of.get(next(iter(readers[root])))
            if reader is None or reader is members:
                continue
            merged = sorted(members + reader, key=order.__getitem__)
            if len(_leaves(merged, by_name, item0)) > MAX_LEAVES:
                continue
            for m in merged:
                group_of[m] = merged
            joined = True
            break


# A linear layer on [B, T, C] is a view to [B T, C], the 2-D GEMM, and a view back; attention's scores a
# [B H, T, T] bmm viewed as [B, H, T, T]: the group reads the view.
GEMMS = {"aten.mm.default", "aten.bmm.default", "aten.addmm.default"}
ROW_VIEWS = {"aten.view.default", "aten._unsafe_view.default"}
# Ops whose kernels run a fused group over each block of their output as they complete it (conv.cpp.j2,
# gemm.cpp.j2's g_finish): the output written once, finished while in cache, no call of the group's own.
FINISHING = {"aten.convolution.default"} | GEMMS


def _epilogue_of(group: dict, by_name: dict, readers: dict, outputs: set) -> tuple[str | None, str | None]:
    """(the convolution (transposed or not) or GEMM whose output this group can finish in place, as each
    stretch of it is computed, the group's leaf that stands for that output): a leaf that is such an op's
    float32 output read by this group's members alone, or a view of a GEMM's output with its rows' length
    kept (the GEMM read by the view alone), the group float32 with a vector body. (None, None) if there is none."""
    if group["vector"] is None or group["dtype"] != "float32":
        return None, None
    return _leaf_read_here_alone(group, FINISHING, by_name, readers, outputs, through_views=True) or (None, None)


def _leaf_read_here_alone(
    group: dict, ops, by_name: dict, readers: dict, outputs: set, through_views: bool = False
) -> tuple[str, str] | None:
    """(node, leaf) for the first of the group's plain (not channel) leaves that is a float32 node of one of
    `ops` (node and leaf the same), or with `through_views` a row-keeping view (ROW_VIEWS) of a GEMM's
    output, not returned and read by this group's members alone: one the group can be computed with
    (_epilogue_of, _row_epilogue_of). None if there is none."""
    members = set(group["members"])
    for value, channel in group["leaves"]:
        node = by_name.get(value["ref"])
        if (
            channel
            or node is None
            or node.get("dtype") != "float32"
            or not _read_alone(node, members, readers, outputs)
        ):
            continue
        if node["op"] in ops:
            return node["name"], node["name"]
        source = by_name.get(node["args"][0]["ref"]) if through_views and node["op"] in ROW_VIEWS else None
        if (
            source is not None
            and source["op"] in GEMMS
            and source.get("dtype") == "float32"
            and node.get("shape", [])[-1:] == source["shape"][-1:]
            and _read_alone(source, {node["name"]}, readers, outputs)
        ):
            return source["name"], node["name"]
    return None


def _read_alone(node: dict, by: set[str], readers: dict, outputs: set) -> bool:
    """`node` not returned, and read by nodes in `by` only."""
    return node["name"] not in outputs and readers.get(node["name"], set()) <= by


# Sums and means a fused group's kernel can compute as it goes (kernels.cpp.j2, fused_<k>_sum_rows): op -> mean.
SUMMED = {"aten.sum.default": False, "aten.sum.dim_IntList": False, "aten.mean.default": True, "aten.mean.dim": True}


def _reduced_by(group: dict, by_name: dict, readers: dict, outputs: set) -> str | None:
    """The float32 sum or mean that is the only reader of this group's result (a loss's mean of its
    elementwise terms), which then computes the group as it sums, never storing it; None if there is none.
    The group float32 with a vector body, no channel leaves and no convolution finishing it."""
    if group["vector"] is None or group["dtype"] != "float32" or group["finished_by"] or group["tuple"]:
        return None
    root = group["root"]
    if root in outputs or any(channel for _, channel in group["leaves"]) or len(readers.get(root, ())) != 1:
        return None
    node = by_name[next(iter(readers[root]))]
    dtype = node.get("kwargs", {}).get("dtype")
    if node["op"] not in SUMMED or node.get("dtype") != "float32" or dtype not in (None, {"dtype": "float32"}):
        return None
    return node["name"] if node["args"][0] == {"ref": root} else None


# Row reductions whose rows a fused group can finish as each one is reduced (kernels.cpp.j2, reduce_rows_then):
# op -> the reduction's kind there (reduce_rows's codes).
ROW_REDUCED = {
    "aten.sum.dim_IntList": 0,
    "aten.mean.dim": 1,
    "aten.amax.default": 2,
    "aten.amin.default": 3,
    "aten.linalg_vector_norm.default": 10,
}


def _row_epilogue_of(group: dict, by_name: dict, readers: dict, outputs: set) -> str | None:
    """The float32 reduction (ROW_REDUCED) whose result this group reads beside the rows it reduced (`x /
    x.norm(dim=-1, keepdim=True)`, `x - x.amax(-1, keepdim=True)`), read by this group's members alone: the
    reduction then runs the group over each row as soon as the row is reduced, while the row is in cache (one
    read of x from memory instead of two), and is computed where the group is. Whether the layouts allow it (the
    last dim reduced, each leaf one value or one row per row) is known at run time only: the helper falls back
    to the two passes. The group float32 with a vector body, no channel leaves, nothing else finishing it."""
    if (
        group["vector"] is None
        or group["dtype"] != "float32"
        or group["finished_by"]
        or group["reduced"]
        or group["tuple"]
    ):
        return None
    if any(channel for _, channel in group["leaves"]):
        return None
    found = _leaf_read_here_alone(group, ROW_REDUCED, by_name, readers, outputs)
    return found[0] if found else None


def _reads(name: str, by_name: dict, item0: dict, inside: set[str]):
    """(operand value, member it comes from or None, channel) for each operand of member `name`."""
    ew, operands, _ = _operands_and_params(by_name[name])
    for i, value in enumerate(operands):
        source = item0.get(value["ref"], value["ref"]) if _is_ref(value) else None
        yield value, (source if source in inside else None), ew == "batch_norm" and i > 0


def _leaves(members: list[str], by_name: dict, item0: dict) -> list:
    """The distinct tensor operands the members read from outside the group, in first-read order, as
    [value, channel] pairs."""
    inside = set(members)
    leaves: list = []
    for name in members:
        for value, member, channel in _reads(name, by_name, item0, inside):
            if _is_ref(value) and member is None and [value, channel] not in leaves:
                leaves.append([value, channel])
    return leaves


def _group(index: int, members: list[str], by_name: dict, item0: dict) -> dict:
    leaves = _leaves(members, by_name, item0)
    inside = set(members)
    position = {m: j for j, m in enumerate(members)}
    params: list[float] = []
    scalar_lines, vector_lines, uniform_lines, vectorizable = [], [], [], True
    for j, name in enumerate(members):
        node = by_name[name]
        ew, _, letters = _operands_and_params(node)
        values, vvalues, run_values = [], [], []  # the operand in the double body, the vector body, once a run
        for value, member, channel in _reads(name, by_name, item0, inside):
            if member is not None:
                values.append(f"t{position[member]}")
                vvalues.append(f"t{position[member]}")
                run_values.append(None)  # never a batch norm's vector: those stay leaves
            elif _is_ref(value):
                k = leaves.index([value, channel])
                values.append(f"v[{k}]")
                vvalues.append(f"ew_leaf<M>(B[{k}], K[{k}], i, m)")
                run_values.append(f"(double)B[{k}][0]")
            else:  # a number
                number = value["float"] if isinstance(value, dict) else value
                params.append(float(number) if isinstance(number, bool) else _f32(float(number)))
                values.append(f"p[{len(params) - 1}]")
                vvalues.append(f"vset((float)p[{len(params) - 1}])")
                run_values.append(f"p[{len(params) - 1}]")
        slots = {}
        for letter, value in letters.items():
            params.append(value)
            slots[letter] = len(params) - 1
        if ew == "batch_norm":
            names, expr = ["x", "mean", "var", "w", "bias"], "(x - mean) * (1.0 / std::sqrt(var + a)) * w + bias"
        else:
            names, expr = ["x", "y", "z"], EW[ew][1]
        special = POW_SCALAR.get(letters["a"]) if ew == "pow_scalar" else None
        if special:
            expr = special[0]
        bindings = " ".join(f"const double {n} = {v};" for n, v in zip(names, values))
        bindings += "".join(f" const double {k} = p[{i}];" for k, i in slots.items())
        dtype = _dtype(node, by_name)
        scalar_lines.append(f"double t{j}; {{ {bindings} t{j} = {_ROUND[dtype].format(e=expr)}; }}")
        vector_form = special[1] if special else EW_VEC.get(ew)
        exact_int = dtype == "int64" and int_range(name, by_name) is not None  # held as float32, exactly
        if vector_form is None or not (dtype == "float32" or exact_int or (dtype == "bool" and ew in VEC_BOOL)):
            vectorizable = False
            continue
        fields = dict(zip(names, vvalues)) | {k: f"vset((float)p[{i}])" for k, i in slots.items()}
        if ew == "batch_norm":  # its vectors are channel leaves or numbers: one value over the run
            _, mean, var, w, bias = run_values
            fields |= {"scale": len(uniform_lines) * 2, "shift": len(uniform_lines) * 2 + 1}
            uniform_lines.append(
                f"{{ const double s = {w} / std::sqrt({var} + p[{slots['a']}]); U[{fields['scale']}] = (float)s; "
                f"U[{fields['shift']}] = (float)({bias} - {mean} * s); }}"
            )
        vector_lines.append(f"const vf t{j} = {vector_form.format(**fields)};")
    last = f"return t{len(members) - 1};"
    # int64 leaves derived from aranges (exact in float32): passed as float32, so the vector body can read them
    float_leaves = [k for k, (value, _) in enumerate(leaves) if _is_ref(value) and int_range(value["ref"], by_name)]
    if vectorizable and any(
        by_name.get(v["ref"], {}).get("dtype") == "int64" and k not in float_leaves
        for k, (v, _) in enumerate(leaves)
        if _is_ref(v)
    ):
        vectorizable = False  # an int64 leaf float32 cannot hold exactly: the double body
    return {
        "index": index,
        "members": members,
        "root": members[-1],
        "dtype": _dtype(by_name[members[-1]], by_name),
        "tuple": by_name[members[-1]]["op"] in BATCH_NORM_EVAL,
        "leaves": leaves,
        "params": params,
        "scalar": scalar_lines + [last],
        "vector": vector_lines + [last] if vectorizable else None,
        "uniform": uniform_lines,
        "float_leaves": float_leaves,
    }
