"""The graph family's ModelNew: the traced graph (graph_trace.py) as straight-line Python over C++ kernels.

Each node becomes one line of `forward`: a view, allocation or copy is called as it is; an elementwise op is
the broadcast elementwise kernel with that operation; anything else is the helper that computes it
(kernels_dataset/templates/graph/helpers.py.j2). Only the C++ kernel groups the plan uses are compiled. No
torch here.
"""

from __future__ import annotations

import keyword
from collections import Counter

from agentkern.policies.builtin import graph_fuse, graph_rewrite
from agentkern.policies.builtin.graph_ops import EW, EW_CODES, EW_OPS, HELPERS, NEUTRAL, VIEWS
from agentkern.policies.builtin.graph_trace import read_counts, refs


def source(value) -> str:
    """A traced argument (graph_trace._value) as Python source."""
    if isinstance(value, list):
        return "[" + ", ".join(source(v) for v in value) + "]"
    if isinstance(value, dict):
        if "ref" in value:
            return value["ref"]
        if "dtype" in value:
            return f"torch.{value['dtype']}"
        if "device" in value:
            return f"torch.device({value['device']!r})"
        if "layout" in value:
            return f"torch.{value['layout']}"
        if "memory_format" in value:
            return f"torch.{value['memory_format']}"
        if "float" in value:
            return f"float({value['float']!r})"
        raise ValueError(f"an argument the renderer cannot write: {value}")
    return repr(value)


def _call(fn: str, node: dict, extra: str = "") -> str:
    args = [source(a) for a in node.get("args", [])]
    args += [f"{k}={source(v)}" for k, v in node.get("kwargs", {}).items()]
    return f"{fn}({', '.join(args + ([extra] if extra else []))})"


def _param(node: dict, spec: tuple) -> str:
    position, keyword, default = spec
    args, kwargs = node.get("args", []), node.get("kwargs", {})
    value = args[position] if len(args) > position else kwargs.get(keyword, default)
    if value is None:
        value = default
    if isinstance(value, str):  # "inf" / "-inf" defaults
        return f"float({value!r})"
    return source(value)


def _elementwise(node: dict) -> str:
    name, positions, params = EW_OPS[node["op"]]
    args = node.get("args", [])
    if node["op"] == "aten.pow.Scalar":  # scalar ** tensor: the tensor is the one operand
        operands = [source(args[1])]
    else:
        operands = [source(args[i]) for i in positions]
    extra = "".join(f", {k}={_param(node, spec)}" for k, spec in params.items())
    return f"_ew({name!r}, torch.{node.get('dtype', 'float32')}, [{', '.join(operands)}]{extra})"


# Ops returning a tuple whose items after the first the helper can skip (not compute, not allocate) when
# nothing reads them: the keyword that says so. Each tensor a helper allocates is an aten op the harness's
# allowlist charges to the candidate (~3 us), besides the work.
OPTIONAL_OUTPUTS = {
    "aten.max_pool2d_with_indices.default": "indices=False",
    "aten.max_pool3d_with_indices.default": "indices=False",
    "aten.max.dim": "indices=False",
    "aten.min.dim": "indices=False",
    "aten.native_batch_norm.default": "stats=False",
    "aten._native_batch_norm_legit_no_training.default": "stats=False",
    "aten._native_batch_norm_legit.default": "stats=False",
    "aten._native_batch_norm_legit.no_stats": "stats=False",
    "aten.native_group_norm.default": "stats=False",
    "aten.native_layer_norm.default": "stats=False",
}


def whole_tuples_read(plan: dict) -> set[str]:
    """Nodes something reads other than as item 0: an `[i]` with i > 0, the tuple passed on whole, or returned."""
    read = set(refs(plan["outputs"]))
    for node in plan["nodes"]:
        if node["op"] == "getitem":
            tup, index = node["args"]
            if index != 0:
                read |= set(refs(tup))
        else:
            read |= set(refs([node.get("args", []), node.get("kwargs", {})]))
    return read


def line(node: dict, read: set[str] | None = None) -> str | None:
    """The statement computing one node (None for inputs, parameters and constants: bound at the top). `read`:
    whole_tuples_read of the plan (None: every output of every node is read)."""
    op, name = node["op"], node["name"]
    if op in ("input", "param", "constant"):
        return None
    if op in OPTIONAL_OUTPUTS and read is not None and name not in read:
        return f"{name} = {_call(HELPERS[op][0], node, OPTIONAL_OUTPUTS[op])}"
    if op == "getitem":
        tup, index = node["args"]
        return f"{name} = {source(tup)}[{index}]"
    if op in NEUTRAL:
        return f"{name} = {_call('torch.ops.' + op, node)}"
    if op in EW_OPS:
        return f"{name} = {_elementwise(node)}"
    return f"{name} = {_call(HELPERS[op][0], node)}"


def _numbers(values: list[float]) -> str:
    return ", ".join(
        source({"float": repr(v)}) if v != v or v in (float("inf"), -float("inf")) else repr(v) for v in values
    )


def _leaves_text(group: dict, finisher: str | None = None) -> str:
    """A fused group's leaves as the helpers take them, (tensor, channel) pairs: an int64 leaf float32 holds
    exactly (graph_fuse.int_range) passed as float32, so the vector body reads it; `finisher`'s output (the
    node computing the group as its epilogue) None."""
    pairs = []
    for k, (value, channel) in enumerate(group["leaves"]):
        if finisher is not None and value["ref"] == finisher:
            pairs.append("(None, False)")
            continue
        tensor = f"{source(value)}.float()" if k in group.get("float_leaves", ()) else source(value)
        pairs.append(f"({tensor}, {channel})")
    return ", ".join(pairs)


def returned_unread(plan: dict) -> set[str]:
    """Nodes the forward returns and no other node reads: their outputs can be stored past the caches. A tuple
    read only as its item 0, itself returned and read by nothing else (a batch norm's output), is one too."""
    readers: dict[str, list[dict]] = {}
    for node in plan["nodes"]:
        for name in set(refs([node.get("args", []), node.get("kwargs", {})])):
            readers.setdefault(name, []).append(node)
    unread = {name for name in refs(plan["outputs"]) if name not in readers}
    for name, nodes in readers.items():
        if all(n["op"] == "getitem" and n["args"][1] == 0 and n["name"] in unread for n in nodes):
            unread.add(name)
    return unread


def _fused_line(group: dict, final: bool = False) -> str:
    """The statement computing a fused group (graph_fuse.py) at its root node; `final`: its output is
    returned and read by nothing else (returned_unread)."""
    leaves = _leaves_text(group)
    tail = ", final=True" if final else ""
    call = f"_fused({group['kernel']}, torch.{group['dtype']}, [{leaves}], [{_numbers(group['params'])}]{tail})"
    return f"{group['root']} = ({call},)" if group["tuple"] else f"{group['root']} = {call}"


def _epilogue_line(group: dict, node: dict, leaf: dict) -> str:
    """The convolution or GEMM (graph_fuse._epilogue_of) or row reduction (graph_fuse._row_epilogue_of)
    computing a fused group as its epilogue, at the group's root; its own output is the leaf written None.
    `leaf`: the group's leaf standing for that output, `node` itself or a view of a GEMM's rows, whose shape
    the GEMM is then told (`frame`)."""
    leaves = _leaves_text(group, leaf["name"])
    epilogue = f"epilogue=({group['kernel']}, [{leaves}], [{_numbers(group['params'])}])"
    if leaf is not node:
        epilogue += f", frame={source(leaf['shape'])}"
    call = _call(HELPERS[node["op"]][0], node, epilogue)
    return f"{group['root']} = ({call},)" if group["tuple"] else f"{group['root']} = {call}"


def _fused_sum_line(group: dict, node: dict) -> str:
    """The sum or mean that computes a fused group as it sums it (graph_fuse._reduced_by), at its own node."""
    leaves = _leaves_text(group)
    rest = [source(a) for a in node.get("args", [])[1:]]
    rest += [f"{k}={source(v)}" for k, v in node.get("kwargs", {}).items()]
    head = [str(group["kernel"]), f"[{leaves}]", f"[{_numbers(group['params'])}]", str(graph_fuse.SUMMED[node["op"]])]
    return f"{node['name']} = _fused_sum({', '.join(head + rest)})"


def _fused_lines(plan: dict, fused: list[dict]) -> dict[str, str | None]:
    """Node name -> its statement where fusion changes it: a group's root computes the group (or the
    convolution or GEMM it finishes does, there), its other members (and a getitem reading one) compute nothing."""
    members = {m: g for g in fused for m in g["members"]}
    by_name = {n["name"]: n for n in plan["nodes"]}
    finals = returned_unread(plan)
    changed: dict[str, str | None] = {g["finished_by"]: None for g in fused if g["finished_by"]}
    changed |= {g["finished_leaf"]: None for g in fused if g["finished_by"]}  # a view of a GEMM's rows, unmade
    changed |= {g["rows_of"]: None for g in fused if g["rows_of"]}
    changed |= {g["reduced"]: _fused_sum_line(g, by_name[g["reduced"]]) for g in fused if g["reduced"]}
    for node in plan["nodes"]:
        name = node["name"]
        if name in members:
            group = members[name]
            if group["root"] != name or group["reduced"]:
                changed[name] = None
            elif group["finished_by"]:
                finisher = by_name[group["finished_by"]]
                changed[name] = _epilogue_line(group, finisher, by_name[group["finished_leaf"]])
            elif group["rows_of"]:
                changed[name] = _epilogue_line(group, by_name[group["rows_of"]], by_name[group["rows_of"]])
            else:
                changed[name] = _fused_line(group, name in finals)
        elif node["op"] == "getitem" and node["args"][0]["ref"] in members:
            source_name = node["args"][0]["ref"]
            if members[source_name]["root"] != source_name:
                changed[name] = None
    return changed


def _int_args(values) -> str | None:
    """A view's arguments after its operand as a constant tuple's source (lists as tuples), or None where one
    is not an int, a list of ints or None (a size read from another node)."""
    parts = []
    for v in values:
        if isinstance(v, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in v):
            parts.append(repr(tuple(v)))
        elif v is None or (isinstance(v, int) and not isinstance(v, bool)):
            parts.append(repr(v))
        else:
            return None
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def view_chains(plan: dict, changed: dict[str, str | None]) -> dict[str, str | None]:
    """Node name -> its statement where a chain of views (graph_ops.VIEWS) becomes one `_views` call: a view
    whose only reader is the next view of the chain is not made, the chain's last view is made from the first
    one's operand in one as_strided (KernelBench L3 32's attention: view, unsqueeze, permute, squeeze; select,
    view, permute, view). Nodes fusion changed (`changed`) stay as they are."""
    readers = read_counts(plan["nodes"], plan["outputs"])
    chains: dict[str, tuple[str, list[str]]] = {}  # a view -> (the chain's operand, its steps so far)
    lines: dict[str, str | None] = {}
    for node in plan["nodes"]:
        name, args = node["name"], node.get("args", [])
        if node["op"] not in VIEWS or name in changed or node.get("kwargs") or not args:
            continue
        operand, rest = args[0], _int_args(args[1:])
        if not isinstance(operand, dict) or "ref" not in operand or rest is None:
            continue
        step = f"({node['op'].removeprefix('aten.')!r}, {rest})"
        ref = operand["ref"]
        if ref in chains and readers[ref] == 1:
            base, steps = chains.pop(ref)
            lines[ref] = None
            chains[name] = (base, steps + [step])
        else:
            chains[name] = (ref, [step])
    for name, (base, steps) in chains.items():
        if len(steps) > 1:
            lines[name] = f"{name} = _views({base}, {name!r}, ({', '.join(steps)}))"
    return lines


def kernel_groups(plan: dict, fused: list[dict] = ()) -> list[str]:
    members = {m for g in fused for m in g["members"]}
    nodes = [n for n in plan["nodes"] if n["name"] not in members]
    groups = {"ew"} if fused or any(n["op"] in EW_OPS for n in nodes) else set()
    groups |= {HELPERS[n["op"]][1] for n in nodes if n["op"] in HELPERS and HELPERS[n["op"]][1]}
    if "conv" in groups:
        groups.add("gemm")  # convolutions run as GEMMs of their input patches (kernels.cpp.j2)
    if any(n["op"] == "aten.convolution.default" and not n["args"][6] and n["args"][3][-1] > 1 for n in nodes):
        groups.add("conv_strided")  # conv_vectors.cpp.j2's tiles for a stride along W (compile time)
    return sorted(groups)


def parameter_access(name: str) -> str:
    """The expression reading the reference's parameter (or buffer) `name` ("conv.weight", "layers.0.bias") at
    each call: its attributes from `R` (the reference), as the module holds it then. A dict of named_parameters()
    rebuilt each call walked every module: 3.2 us against 2.2 for KernelBench L2 1's three (timeit, 2026-11-29).
    A name of one part is R's attribute; a path through submodules goes through _attr (helpers.py.j2), which
    reads the modules' dicts: `R.conv1.weight` took 1.11 us, _attr 0.22 (timeit, Zen 5, 2026-12-08)."""
    parts = name.split(".")
    if len(parts) == 1 and name.isidentifier() and not keyword.iskeyword(name):
        return "R." + name
    return f"_attr(R, {tuple(parts)!r})"


def context(spec: dict) -> dict:
    """What graph/cpp.py.j2 renders from."""
    plan = graph_rewrite.rewrite(spec["attrs"]["graph"])
    bound = []
    for node in plan["nodes"]:
        if node["op"] == "input":
            bound.append(f"{node['name']} = inputs[{node['of']}]")
        elif node["op"] == "param":
            bound.append(f"{node['name']} = {parameter_access(node['of'])}")
        elif node["op"] == "constant":
            bound.append(f"{node['name']} = self._constant_{node['name']}")
    outputs = [source(o) for o in plan["outputs"]]
    read = whole_tuples_read(plan)
    fused = graph_fuse.groups(plan, read)
    changed = _fused_lines(plan, fused)
    changed |= view_chains(plan, changed)
    lines = [changed[n["name"]] if n["name"] in changed else line(n, read) for n in plan["nodes"]]
    return {
        "bound": bound,
        "lines": [s for s in lines if s],
        "returned": outputs[0] if len(outputs) == 1 else "(" + ", ".join(outputs) + ",)",
        "constants": [n for n in plan["nodes"] if n["op"] == "constant"],
        "kernels": kernel_groups(plan, fused),
        "fused": fused,
        "fused_kernels": len({g["kernel"] for g in fused}),
        "ew": EW,
        "ew_codes": EW_CODES,
        "inputs": plan["inputs"],
    }


def summary(spec: dict) -> str:
    """`12 ops: 2 convolution, 3 mul, ...` for the docstring."""
    ops = Counter(
        n["op"].split(".")[1] if n["op"].startswith("aten.") else n["op"]
        for n in spec["attrs"]["graph"]["nodes"]
        if n["op"] not in ("input", "param", "constant", "getitem")
    )
    return f"{sum(ops.values())} ops: " + ", ".join(f"{c} {op}" for op, c in ops.most_common())
