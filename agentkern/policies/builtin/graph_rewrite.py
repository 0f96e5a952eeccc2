"""Rewrites of a traced plan (graph_trace.py) that change the work, never the value: applied before fusion.

The sum (or mean) of a GEMM's output over its columns, through any scaling by numbers, is the GEMM of its first
operand with the sum (mean) of the second's columns: sum_n (A @ B)[m, n] = A[m] @ (sum_n B[:, n]). A [M, N]
product summed to [M, 1] becomes a matrix-vector product, and B's column sums a pass over B (KernelBench level 2:
Gemm_Divide_Sum_Scaling, Matmul_Sum_Max_...). It also changes the rounding: the [M, N] outputs summed cancel to
results near zero for some rows, where a tolerance of 1e-4 is mostly absolute. With the column sums taken first
(in double: reduce_mid_f32), 14_Gemm_Divide_Sum_Scaling at --size small came within 0.37 of the tolerance of
eager's outputs over 200 draws in one process, against 0.77 for the GEMM summed (2026-11-28).

A log-softmax read only by a gather of one index a row along its dim (a cross-entropy's log-probabilities of its
targets) becomes one op, `agentkern.log_softmax_gather`: each row's log-sum-exp and its pick, the same values,
without the [rows, classes] log-softmax written and read back (graph/helpers.py.j2 `_log_softmax_gather`).

A GEMM read only by a `where` that keeps a triangle of it and zeros the rest (torch.tril / torch.triu of a
product: the column index less the row index compared with a number) becomes the GEMM told the triangle
(`triangle=[kind, d]`: 1 keeps j - i <= d, 2 keeps j - i >= d): the kernel skips the tiles outside it and writes
zeros there, the `where` and its index grids gone (KernelBench level 1 14 and 15).

A view of a node repeated by the same op and arguments (a loop in forward transposing a weight at every step) is
made once, its repeats read the first.
"""

from __future__ import annotations

from agentkern.policies.builtin.graph_ops import VIEWS
from agentkern.policies.builtin.graph_trace import read_counts, refs

SCALINGS = {"aten.mul.Tensor", "aten.div.Tensor"}  # by a number: they commute with the sum
REDUCTIONS = {"aten.sum.dim_IntList", "aten.mean.dim"}


def rewrite(plan: dict) -> dict:
    """The plan with every GEMM-then-column-sum, triangle of a GEMM and log-softmax-then-pick rewritten (a new
    plan; `plan` is untouched)."""
    nodes = [dict(n) for n in plan["nodes"]]
    changed = True
    while changed:
        changed = False
        readers = read_counts(nodes, plan["outputs"])
        by_name = {n["name"]: n for n in nodes}
        for node in nodes:
            found = _gemm_summed(node, by_name, readers)
            if found:
                nodes = _rewritten(nodes, node, *found)
                changed = True
                break
            kept = _triangle_kept(node, by_name, readers)
            if kept:
                gemm, triangle = kept
                told = {**gemm, "name": node["name"], "kwargs": {**gemm["kwargs"], "triangle": triangle}}
                nodes = _without_unread([told if n is gemm else n for n in nodes if n is not node], plan["outputs"])
                changed = True
                break
            picked = _log_softmax_picked(node, by_name, readers)
            if picked:
                nodes = [
                    {
                        **node,
                        "op": "agentkern.log_softmax_gather",
                        "args": [picked["args"][0], node["args"][1], node["args"][2]],
                        "kwargs": {},
                    }
                    if n is node
                    else n
                    for n in nodes
                    if n is not picked
                ]
                changed = True
                break
    return {**plan, "nodes": _same_views_once(nodes, plan["outputs"])}


def _same_views_once(nodes: list[dict], outputs: list) -> list[dict]:
    """Each view (graph_ops.VIEWS) made once: a later view of the same node by the same op and arguments is
    dropped and its readers read the first (a recurrent network's weight transposed at every time step:
    KernelBench L3 34's 256 `permute`s of two weights, ~3 us each). Returned views stay: each its own tensor."""
    returned = set(refs(outputs))
    first: dict[str, str] = {}
    same: dict[str, str] = {}
    kept = []
    for node in nodes:
        if same:
            node = {
                **node,
                "args": _renamed(node.get("args", []), same),
                "kwargs": _renamed(node.get("kwargs", {}), same),
            }
        if node["op"] in VIEWS and node["name"] not in returned:
            key = repr((node["op"], node.get("args"), node.get("kwargs")))
            if key in first:
                same[node["name"]] = first[key]
                continue
            first[key] = node["name"]
        kept.append(node)
    return kept


def _renamed(value, names: dict[str, str]):
    """A traced value with its refs to the nodes in `names` made refs to their replacements."""
    if isinstance(value, dict):
        if "ref" in value:
            return {**value, "ref": names.get(value["ref"], value["ref"])}
        return {k: _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return value


def _log_softmax_picked(node: dict, by_name: dict, readers: dict) -> dict | None:
    """The log-softmax `node` gathers from, where it is read by nothing else and `node` picks one index a row
    along its dim (the index's size 1 there, the others x's: checked again at run time by the helper)."""
    if node.get("op") != "aten.gather.default" or node.get("kwargs", {}).get("sparse_grad") or len(node["args"]) != 3:
        return None
    value, dim, index = node["args"]
    source = _ref(value, by_name)
    if _ref(index, by_name) is None or source is None:
        return None
    if source["op"] != "aten._log_softmax.default" or len(source["args"]) != 3:
        return None
    if readers.get(source["name"], 0) != 1:
        return None
    shape = source.get("shape", [])
    if source.get("dtype") != "float32" or source["args"][2] is not False or not shape or not isinstance(dim, int):
        return None
    if dim % len(shape) != source["args"][1] % len(shape) or node.get("shape") != [*shape[:-1], 1]:
        return None
    return source if dim % len(shape) == len(shape) - 1 else None


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _gemm_summed(node: dict, by_name: dict, readers: dict) -> tuple[dict, list[dict]] | None:
    """(the GEMM, the scalings between it and `node`) where `node` sums a 2-D GEMM's output over its columns."""
    if node.get("op") not in REDUCTIONS or node.get("dtype") != "float32" or len(node.get("shape", [])) not in (1, 2):
        return None
    args = node["args"]
    dims = args[1] if len(args) > 1 else node["kwargs"].get("dim")
    if (
        node["kwargs"].get("dtype") is not None
        or not isinstance(dims, list)
        or len(dims) != 1
        or dims[0] not in (1, -1)
    ):
        return None
    chain: list[dict] = []
    value = args[0]
    while isinstance(value, dict) and "ref" in value:
        source = by_name[value["ref"]]
        if readers.get(source["name"], 0) != 1:
            return None  # read elsewhere too: its columns are needed
        if (
            source["op"] in SCALINGS
            and len(source["args"]) == 2
            and _number(source["args"][1])
            and not source["kwargs"]
        ):
            chain.append(source)
            value = source["args"][0]
            continue
        if _gemm(source, by_name):
            return source, chain[::-1]
        return None
    return None


def _gemm(node: dict, by_name: dict) -> bool:
    if node.get("dtype") != "float32" or len(node.get("shape", [])) != 2:
        return False
    if node["op"] == "aten.mm.default":
        return True
    if node["op"] == "aten.addmm.default":
        bias = node["args"][0]
        return isinstance(bias, dict) and "ref" in bias and len(by_name[bias["ref"]].get("shape", [])) == 1
    return False


def _rewritten(nodes: list[dict], summed: dict, gemm: dict, chain: list[dict]) -> list[dict]:
    by_name = {n["name"]: n for n in nodes}
    op, name, rows = summed["op"], summed["name"], gemm["shape"][0]  # the sum or the mean, of B's columns instead
    offset = 1 if gemm["op"] == "aten.addmm.default" else 0
    a, b = gemm["args"][offset], gemm["args"][offset + 1]
    source = by_name[b["ref"]]
    new: list[dict] = []
    if _plain_transpose(source):  # B = W.t(): W's rows summed as W lies, not a transposed copy of W
        k = source["shape"][0]
        new.append(_node(f"{name}_wsum", op, [source["args"][0], [0], True], [1, k]))
        new.append(_node(f"{name}_bsum", "aten.permute.default", [{"ref": f"{name}_wsum"}, [1, 0]], [k, 1]))
    else:
        new.append(_node(f"{name}_bsum", op, [b, [1], True], [source["shape"][0], 1]))
    args = [a, {"ref": f"{name}_bsum"}] + gemm["args"][offset + 2 :]
    if offset:  # the bias's sum (mean) too: sum_n (beta bias[n] + alpha (A B)[m, n])
        new.append(_node(f"{name}_biassum", op, [gemm["args"][0], [0], True], [1]))
        args = [{"ref": f"{name}_biassum"}] + args
    steps = [_node(gemm["name"], gemm["op"], args, [rows, 1], gemm["kwargs"])] + [
        {**n, "shape": [rows, 1]} for n in chain
    ]
    keepdim = summed["args"][2] if len(summed["args"]) > 2 else summed["kwargs"].get("keepdim", False)
    if keepdim is True:
        steps[-1]["name"] = name  # [rows, 1] already: the last step is the sum's value (read by nothing else)
    else:
        steps.append(_node(name, "aten.squeeze.dim", [{"ref": steps[-1]["name"]}, 1], [rows]))
    replaced = {gemm["name"], name} | {n["name"] for n in chain}
    out = []
    for node in nodes:
        if node["name"] == gemm["name"]:
            out += new + steps
        elif node["name"] not in replaced:
            out.append(node)
    return out


def _plain_transpose(node: dict) -> bool:
    if len(node.get("shape", [])) != 2:
        return False
    return node["op"] == "aten.t.default" or (node["op"] == "aten.permute.default" and node["args"][1] == [1, 0])


def _node(name: str, op: str, args: list, shape: list, kwargs: dict | None = None) -> dict:
    return {"name": name, "op": op, "args": args, "kwargs": dict(kwargs or {}), "shape": shape, "dtype": "float32"}


# A comparison of the index grid's j - i (or i - j) with a number d -> (kind, d') on j - i: 1 keeps j - i <= d',
# 2 keeps j - i >= d'. Keyed by (op, the grid is i - j).
_TRIANGLES = {
    ("aten.le.Scalar", False): lambda d: (1, d),
    ("aten.lt.Scalar", False): lambda d: (1, d - 1),
    ("aten.ge.Scalar", False): lambda d: (2, d),
    ("aten.gt.Scalar", False): lambda d: (2, d + 1),
    ("aten.le.Scalar", True): lambda d: (2, -d),
    ("aten.lt.Scalar", True): lambda d: (2, -d + 1),
    ("aten.ge.Scalar", True): lambda d: (1, -d),
    ("aten.gt.Scalar", True): lambda d: (1, -d - 1),
}


def _triangle_kept(node: dict, by_name: dict, readers: dict) -> tuple[dict, list[int]] | None:
    """(the GEMM, [kind, d]) where `node` is a `where` keeping a triangle of a 2-D GEMM's output that nothing else
    reads, zeros elsewhere."""
    if node.get("op") != "aten.where.self" or len(node["args"]) != 3:
        return None
    cond, kept, other = node["args"]
    gemm = _ref(kept, by_name)
    if gemm is None or not _gemm(gemm, by_name) or readers.get(gemm["name"], 0) != 1 or not _zero(_ref(other, by_name)):
        return None
    if "triangle" in gemm["kwargs"] or node.get("shape") != gemm["shape"] or node.get("dtype") != "float32":
        return None
    compared = _index_compare(_ref(cond, by_name), by_name, gemm["shape"])
    return (gemm, list(compared)) if compared else None


def _zero(node: dict | None) -> bool:
    return node is not None and node["op"] == "aten.scalar_tensor.default" and node["args"] in ([0], [0.0])


# What a rewritten `where` read: dropped where nothing else reads it.
_INDEX_GRID_OPS = {"aten.arange.default", "aten.arange.start", "aten.arange.start_step", "aten.unsqueeze.default"}
_INDEX_GRID_OPS |= {"aten.sub.Tensor", "aten.scalar_tensor.default"} | {op for op, _ in _TRIANGLES}


def _without_unread(nodes: list[dict], outputs: list) -> list[dict]:
    """`nodes` less the index grids, comparisons and zeros nothing reads, repeatedly."""
    while True:
        readers = read_counts(nodes, outputs)
        kept = [n for n in nodes if n["op"] not in _INDEX_GRID_OPS or readers.get(n["name"], 0)]
        if len(kept) == len(nodes):
            return nodes
        nodes = kept


def _ref(value, by_name: dict) -> dict | None:
    return by_name.get(value["ref"]) if isinstance(value, dict) and "ref" in value else None


def _index_compare(mask: dict | None, by_name: dict, shape: list) -> tuple[int, int] | None:
    """(kind, d) where `mask` compares the [M, N] grid j - i (or i - j) with a whole number."""
    if mask is None or len(mask["args"]) != 2 or type(mask["args"][1]) is not int:
        return None
    grid = _ref(mask["args"][0], by_name)
    if grid is None or grid["op"] != "aten.sub.Tensor" or grid["kwargs"] or len(grid["args"]) != 2:
        return None
    vectors = [_index_vector(_ref(a, by_name), by_name) for a in grid["args"]]
    rows, cols = ("rows", shape[0]), ("cols", shape[1])
    if vectors not in ([cols, rows], [rows, cols]):
        return None
    make = _TRIANGLES.get((mask["op"], vectors[0] == rows))
    return make(mask["args"][1]) if make else None


def _index_vector(node: dict | None, by_name: dict) -> tuple[str, int] | None:
    """("rows", M) for arange(M) unsqueezed to [M, 1], ("cols", N) for arange(N) unsqueezed to [1, N]."""
    if node is None or node["op"] != "aten.unsqueeze.default":
        return None
    arange = _ref(node["args"][0], by_name)
    if not _counts_from_zero(arange):
        return None
    length = arange["shape"][0]
    return {(length, 1): ("rows", length), (1, length): ("cols", length)}.get(tuple(node.get("shape", [])))


def _counts_from_zero(node: dict | None) -> bool:
    """arange(n), arange(0, n) or arange(0, n, 1): the values 0 .. n - 1."""
    if node is None or len(node.get("shape", [])) != 1:
        return False
    args = node["args"]
    if node["op"] == "aten.arange.default":
        return len(args) == 1
    if node["op"] == "aten.arange.start":
        return len(args) == 2 and args[0] == 0
    if node["op"] == "aten.arange.start_step":
        return args[0] == 0 and (len(args) == 2 or args[2] == 1)
    return False
