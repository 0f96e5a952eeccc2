"""A problem's whole computation as a graph of core ATen ops, for the graph family (graph_render.py).

Runs WITH torch, in the sandbox worker (mode "analyze"), after the family matcher (patterns.py) found no single
template for the problem. The Model is traced with make_fx and PyTorch's core-ATen decompositions (as
Inductor sees it: losses, activations and compositions become a small vocabulary of elementwise ops,
reductions, views, GEMMs, convolutions, pooling and norms), parameters and buffers as explicit arguments.
The result is JSON: one entry per node, arguments as references to earlier nodes or as tagged constants.
No shapes are baked into the kernels the renderer writes; only the view ops carry the sizes they were
traced with (as the reference's own code does at that size).
"""

from __future__ import annotations

import math
from collections import Counter

from agentkern.helpers import python_parser_lock
from agentkern.policies.builtin.graph_ops import OPS
from agentkern.policies.builtin.ir import Unsupported

DTYPES = ("float32", "int64", "bool")


def trace_graph(model, inputs: list) -> dict:
    """{"params": [attribute paths], "inputs": n, "nodes": [...], "outputs": [...]} or Unsupported."""
    import torch
    from torch._decomp import core_aten_decompositions
    from torch.fx.experimental.proxy_tensor import make_fx

    named = dict(model.named_parameters())
    named.update(dict(model.named_buffers()))
    paths = list(named)

    def forward(*flat):
        values = dict(zip(paths, flat[: len(paths)]))
        return torch.func.functional_call(model, values, tuple(flat[len(paths) :]))

    # functionalize: the forward's own in-place ops (x.relu_()) become out-of-place ones (those a decomposition
    # emits are not seen by it: _op_name).
    # A number among the inputs is traced as a 0-d tensor: the rendered forward gets the number itself, which
    # its elementwise kernel takes as a 0-d operand (a Python float meets float32 as a float32 scalar).
    inputs = [torch.tensor(x, dtype=torch.float32) if isinstance(x, float) else x for x in inputs]
    # Under the parser's lock: tracing parses Python inside torch (inspect.signature of builtins: 58 ast.parse
    # calls for a small model), which races a parse in another thread (helpers.python_parser_lock).
    with torch.no_grad(), python_parser_lock():
        gm = make_fx(torch.func.functionalize(forward), decomposition_table=core_aten_decompositions())(
            *named.values(), *inputs
        )
    names: dict = {}
    nodes: list[dict] = []
    placeholders = 0
    missing: dict[str, int] = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            kind = ("param", paths[placeholders]) if placeholders < len(paths) else ("input", placeholders - len(paths))
            names[node] = f"v{len(names)}"
            nodes.append({"name": names[node], "op": kind[0], "of": kind[1], **_meta(node)})
            placeholders += 1
        elif node.op == "get_attr":
            names[node] = f"v{len(names)}"
            nodes.append({"name": names[node], "op": "constant", "value": _constant(getattr(gm, node.target))})
        elif node.op == "call_function":
            op = _op_name(node.target)
            if op not in OPS:
                missing[op] = missing.get(op, 0) + 1
            names[node] = f"v{len(names)}"
            args = [_value(a, names) for a in node.args]
            kwargs = {k: _value(v, names) for k, v in node.kwargs.items()}
            nodes.append({"name": names[node], "op": op, "args": args, "kwargs": kwargs, **_meta(node)})
        elif node.op == "output":
            outputs = node.args[0]
            outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
            out = [_value(o, names) for o in outputs]
    nodes = _live(nodes, out)
    missing = {op: k for op, k in missing.items() if any(n["op"] == op for n in nodes)}
    if missing:
        ops = sorted(missing, key=lambda k: -missing[k])
        raise Unsupported(
            f"graph: no kernel for {', '.join(ops[:4])}" + (f" and {len(ops) - 4} more" if len(ops) > 4 else "")
        )
    bad = sorted({n["dtype"] for n in nodes if n.get("dtype") and n["dtype"] not in DTYPES and n["op"] != "param"})
    if bad:
        raise Unsupported(f"graph: the kernels compute float32 (with int64 and bool), the problem uses {bad[0]}")
    return {"params": paths, "inputs": placeholders - len(paths), "nodes": nodes, "outputs": out}


def _live(nodes: list[dict], outputs: list) -> list[dict]:
    """The nodes the outputs depend on (a trace keeps unused ones: batch norm's reserve, its statistics)."""
    wanted = set(refs(outputs))
    kept = []
    for node in reversed(nodes):
        if node["name"] in wanted:
            kept.append(node)
            wanted |= set(refs([node.get("args", []), node.get("kwargs", {})]))
    return kept[::-1]


def read_counts(nodes: list[dict], outputs: list) -> Counter:
    """How many times each node is read: by the nodes' arguments and by the outputs (a node read twice by one
    op counts twice)."""
    counts = Counter(refs(outputs))
    for node in nodes:
        counts.update(refs([node.get("args", []), node.get("kwargs", {})]))
    return counts


def refs(value):
    """The names of the nodes a traced value refers to (its {"ref": name} entries, at any depth)."""
    if isinstance(value, dict):
        if "ref" in value:
            yield value["ref"]
        else:
            for v in value.values():
                yield from refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from refs(v)


def _op_name(target) -> str:
    """'aten.add.Tensor', or 'getitem' for operator.getitem. An in-place op a decomposition emits
    (`clamp_min_` in cosine_similarity's) is its out-of-place twin: the trace's later uses read its result.
    (Not copy_: it writes into a view of another tensor, which an out-of-place copy would not update.)"""
    name = str(target)
    if "getitem" in name:
        return "getitem"
    parts = name.split(".")
    if len(parts) == 3 and parts[1].endswith("_") and not parts[1].startswith("_") and parts[1] != "copy_":
        return f"{parts[0]}.{parts[1][:-1]}.{parts[2]}"
    return name


def _meta(node) -> dict:
    import torch

    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        return {"shape": list(val.shape), "dtype": str(val.dtype).removeprefix("torch.")}
    return {}


def _constant(value) -> dict:
    """A tensor the traced code made (torch.tensor(...) in forward): its values, small ones only."""
    import torch

    if not isinstance(value, torch.Tensor) or value.numel() > 4096:
        raise Unsupported("graph: the forward builds a large tensor constant")
    return {"tensor": value.detach().cpu().tolist(), "dtype": str(value.dtype).removeprefix("torch.")}


def _value(v, names: dict):
    """A node argument as JSON: {"ref": name}, a tagged constant, or a plain value."""
    import torch

    if isinstance(v, torch.fx.Node):
        return {"ref": names[v]}
    if isinstance(v, (list, tuple)):
        return [_value(x, names) for x in v]
    if isinstance(v, torch.dtype):
        return {"dtype": str(v).removeprefix("torch.")}
    if isinstance(v, torch.device):
        return {"device": v.type}
    if isinstance(v, torch.layout):
        return {"layout": str(v).removeprefix("torch.")}
    if isinstance(v, torch.memory_format):
        return {"memory_format": str(v).removeprefix("torch.")}
    if isinstance(v, float) and not math.isfinite(v):
        return {"float": repr(v)}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise Unsupported(f"graph: an argument of kind {type(v).__name__}")
