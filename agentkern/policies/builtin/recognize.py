"""What does a problem compute? `analyze(problem_path)` -> an OpSpec (agentkern/types.py, a JSON-able dict).

Runs WITH torch, inside the sandbox worker (mode "analyze"), never in the CLI process. The problem's Model
is built as the harness builds it, traced with torch.fx (fallback: a TorchDispatchMode trace of one
forward call, for models fx cannot trace), lowered to a canonical op graph (ir.py) and matched against the
families the templates implement (patterns.py).

OpSpec keys: family (or None), reason (why None), dtype, input_shapes, output_shape, init_args, attrs,
epilogue, param_paths, model_source, frontend, size, and eager_ops for a recognised problem.
"""

from __future__ import annotations

import ast
import copy
import itertools
from pathlib import Path

from agentkern.harness.second_shape import derived_statements
from agentkern.helpers import one_line, parse_python
from agentkern.policies.builtin.graph_trace import trace_graph
from agentkern.policies.builtin.ir import MODULES, N, Unsupported, dtype_name, eager_kernels, lower
from agentkern.policies.builtin.patterns import match
from agentkern.types import OpSpec


def analyze_request(request: dict, phase=None) -> dict:
    """The sandboxed worker's "analyze" mode (agentkern/harness/worker.py MODES)."""
    return {"status": "ok", "correct": False, "spec": analyze(request["problem_path"], request.get("size"))}


def analyze(problem_path: str, size: str | None = None) -> OpSpec:
    import torch

    from agentkern.harness.loading import load_module
    from agentkern.sizes import apply_size

    module = load_module(str(problem_path), "agentkern_analyzed", register=False)
    sized = apply_size(module, size)  # the shapes the harness will use (agentkern/sizes.py)
    init = list(module.get_init_inputs())
    torch.manual_seed(42)
    model = module.Model(*init).eval()
    inputs = list(module.get_inputs())
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    spec: OpSpec = {
        "family": None,
        "reason": None,
        "dtype": dtype_name(next((t.dtype for t in tensors if t.is_floating_point()), torch.float32)),
        "input_shapes": [list(t.shape) if isinstance(t, torch.Tensor) else None for t in inputs],
        "output_shape": None,
        "init_args": [_jsonable(a) for a in init],
        "attrs": {},
        "epilogue": [],
        "param_paths": {},
        "model_source": model_source(problem_path, overrides=sized),
        "frontend": None,
        "size": size if sized else None,
    }
    reasons = []
    frontends = (("fx", _fx_graph), ("dispatch", _dispatch_graph))
    if len(tensors) != len(inputs):  # only the graph family takes a number as an input (a 0-d operand)
        bad = next(type(a).__name__ for a in inputs if not isinstance(a, torch.Tensor))
        reasons.append(f"forward takes a non-tensor input ({bad}): the templates take tensors only")
        frontends = ()
    for frontend, trace in frontends:
        try:
            out = trace(model, inputs)
            found = match(out)
        except Unsupported as exc:
            reasons.append(str(exc))
            continue
        except Exception as exc:  # noqa: BLE001 - fx cannot trace data-dependent control flow, ...
            reasons.append(
                f"{frontend} trace failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            )
            continue
        spec.update(found, frontend=frontend, output_shape=list(out.shape), eager_ops=eager_kernels(out))
        return spec
    # No one template computes it: the whole graph, op by op (graph_trace.py).
    try:
        plan = trace_graph(model, inputs)
    except Unsupported as exc:
        spec["reason"] = f"{reasons[0]}; {exc}"
        return spec
    except Exception as exc:  # noqa: BLE001 - make_fx cannot trace everything either
        spec["reason"] = f"{reasons[0]}; graph trace failed: {type(exc).__name__}: {one_line(str(exc))[:200]}"
        return spec
    shape = next((n.get("shape") for n in plan["nodes"] if n["name"] == (plan["outputs"][0] or {}).get("ref")), None)
    spec.update(family="graph", frontend="graph", output_shape=shape, attrs={"graph": plan})
    return spec


def _jsonable(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return repr(v)


def _named_tensors(model) -> dict[int, str]:
    return {id(t): name for name, t in itertools.chain(model.named_parameters(), model.named_buffers())}


def _single_output(value, what):
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise Unsupported(f"the model returns {len(value)} outputs: only one is supported")
        value = value[0]
    if not isinstance(value, N):
        raise Unsupported(f"the output is not a tensor computed from the inputs ({what})")
    return value


# ---- torch.fx --------------------------------------------------------------------------------------------
def _fn_name(target) -> str:
    return getattr(target, "__name__", str(target))


def _fx_graph(model, inputs) -> N:
    import torch
    import torch.fx as fx

    gm = fx.symbolic_trace(model)
    values: dict = {}

    class Recorder(fx.Interpreter):
        def run_node(self, n):
            values[n] = result = super().run_node(n)
            return result

    with torch.no_grad():
        Recorder(gm).run(*inputs)
    env: dict = {}
    n_inputs = 0
    for node in gm.graph.nodes:
        val = values.get(node)
        conv = lambda a: fx.node.map_arg(a, lambda x: env[x])  # noqa: E731
        if node.op == "output":
            return _single_output(conv(node.args[0]), "fx")
        is_tensor = isinstance(val, torch.Tensor)
        is_tuple = isinstance(val, tuple) and val and all(isinstance(v, torch.Tensor) for v in val)
        shape, dtype = (tuple(val.shape), val.dtype) if is_tensor else (None, None)
        if node.op == "placeholder":
            env[node] = N("input", attrs={"index": n_inputs}, shape=shape, dtype=dtype_name(dtype))
            n_inputs += 1
        elif not (is_tensor or is_tuple):
            env[node] = val  # sizes, python scalars, attributes: constants for this trace
        elif node.op == "get_attr":
            env[node] = _fx_param(model, node.target, shape, dtype)
        elif node.op == "call_module":
            mod = gm.get_submodule(node.target)
            lowering = MODULES.get(type(mod).__name__)
            args = conv(node.args)
            if lowering is None:
                env[node] = N(
                    "unsupported",
                    [a for a in args if isinstance(a, N)],
                    {"name": f"module {type(mod).__name__}", "why": "no template for it"},
                    shape,
                )
                continue

            def P(attr, mod=mod, prefix=node.target):
                t = getattr(mod, attr, None)
                return (
                    None
                    if t is None
                    else N("param", attrs={"path": f"{prefix}.{attr}"}, shape=tuple(t.shape), dtype=dtype_name(t.dtype))
                )

            name, args, kw = lowering(mod, args[0], P)
            env[node] = lower(name, args, kw, shape, dtype)
        else:
            name = node.target if node.op == "call_method" else _fn_name(node.target)
            env[node] = lower(name, list(conv(node.args)), dict(conv(node.kwargs)), shape, dtype)
    raise Unsupported("the traced graph has no output")


def _fx_param(model, path: str, shape, dtype) -> N:
    obj = model
    for part in path.split("."):
        obj = getattr(obj, part, None)
    if obj is None:
        return N(
            "unsupported", attrs={"name": "a tensor constant", "why": "not an attribute of the model"}, shape=shape
        )
    return N("param", attrs={"path": path}, shape=shape, dtype=dtype_name(dtype))


# ---- dispatch-mode trace (fallback) ----------------------------------------------------------------------
def _dispatch_graph(model, inputs) -> N:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    env: dict[int, N] = {}
    keep: list = []  # holds every traced tensor, so no id() is reused during the trace
    for i, t in enumerate(inputs):
        env[id(t)] = N("input", attrs={"index": i}, shape=tuple(t.shape), dtype=dtype_name(t.dtype))
    for tid, name in _named_tensors(model).items():
        env.setdefault(tid, N("param", attrs={"path": name}))
    for _name, t in itertools.chain(model.named_parameters(), model.named_buffers()):
        env[id(t)].shape, env[id(t)].dtype = tuple(t.shape), dtype_name(t.dtype)

    def conv(a):
        if isinstance(a, torch.Tensor):
            return env.get(id(a)) or N(
                "unsupported", attrs={"name": "a tensor made inside forward", "why": "constant"}, shape=tuple(a.shape)
            )
        if isinstance(a, (list, tuple)):
            return type(a)(conv(x) for x in a) if not isinstance(a, torch.Size) else list(a)
        if isinstance(a, dict):
            return {k: conv(v) for k, v in a.items()}
        return a

    class Trace(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            name = func.overloadpacket.__name__
            if isinstance(out, torch.Tensor):
                env[id(out)] = lower(name, list(conv(args)), conv(kwargs), out.shape, out.dtype)
                keep.append(out)
            elif isinstance(out, (tuple, list)) and all(isinstance(o, torch.Tensor) for o in out):
                node = lower(name, list(conv(args)), conv(kwargs))
                for i, o in enumerate(out):
                    env[id(o)] = lower("getitem", [node, i], {}, o.shape, o.dtype)
                    keep.append(o)
            return out

    with torch.no_grad(), Trace():
        result = model(*inputs)
    keep.append(result)
    if isinstance(result, (list, tuple)):
        return _single_output([env.get(id(r)) for r in result], "dispatch")
    return _single_output(env.get(id(result)) if isinstance(result, torch.Tensor) else None, "dispatch")


# ---- the Model's source, for a solution to rebuild identical parameters --------------------------------
def _defined(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_ClassDef(self, node):
        if node.name == self.old:
            node.name = self.new
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == self.old:
            node.id = self.new
        return node


def model_source(problem_path, new_name: str = "_Reference", overrides: dict | None = None) -> str:
    """The problem's Model class (renamed `new_name`) and every top-level statement it needs, imports
    included, in file order: enough to construct identical parameters under the same seed. `overrides`
    (a size's constants, agentkern/sizes.py) are re-assigned after them, so a Model that reads a size
    constant itself builds the same parameters as the sized reference."""
    tree = parse_python(Path(problem_path).read_text())
    owner: dict[str, int] = {}
    for i, stmt in enumerate(tree.body):
        for name in _defined(stmt):
            owner.setdefault(name, i) if isinstance(stmt, (ast.Import, ast.ImportFrom)) else owner.__setitem__(name, i)
    needed: set[int] = set()
    todo = ["Model"]
    while todo:
        i = owner.get(todo.pop())
        if i is None or i in needed:
            continue
        needed.add(i)
        todo.extend(n.id for n in ast.walk(tree.body[i]) if isinstance(n, ast.Name))
    body = [stmt for i, stmt in enumerate(tree.body) if i in needed]
    overridden = frozenset(name for name in overrides or {} if owner.get(name) in needed)
    for name in sorted(overridden):  # in one order: the rendered file, so its build's cache key, the same each run
        body.extend(parse_python(f"{name} = {overrides[name]!r}").body)
    body.extend(copy.deepcopy(derived_statements(body[: len(body) - len(overridden)], overridden)))
    module = _Rename("Model", new_name).visit(ast.Module(body=body, type_ignores=[]))
    return ast.unparse(ast.fix_missing_locations(module))
