"""A small canonical op graph that both front ends (torch.fx and a dispatch-mode trace) lower to.

fx sees `torch.softmax`, `F.softmax`, `x.softmax` and `nn.Softmax`; a dispatch trace sees `aten._softmax`.
`lower(name, args, kwargs, ...)` turns any of them into one canonical node (`N("softmax", [x], {"dim": 1})`),
so the pattern matcher (patterns.py) only knows one vocabulary. Tensor arguments are `N` nodes; everything
else (dims, scalars, eps) stays a plain Python value. No torch import here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FP32_EPS = 1.1920928955078125e-07  # torch.finfo(torch.float32).eps: nn.RMSNorm's eps=None


class Unsupported(Exception):
    """The model does something the built-in templates cannot express; the message says what (one line)."""


@dataclass(eq=False)
class N:
    op: str  # canonical op: "input", "param", "softmax", "mm", "add", "unsupported", ...
    args: list = field(default_factory=list)
    attrs: dict = field(default_factory=dict)
    shape: tuple | None = None
    dtype: str | None = None

    def __repr__(self) -> str:  # short: used in reasons
        return f"{self.attrs.get('name', self.op)}{list(self.shape) if self.shape is not None else ''}"


UNARY = {"relu", "gelu", "silu", "sigmoid", "tanh", "neg", "abs", "exp", "rsqrt", "sqrt", "leaky_relu", "clamp"}
BINARY = {"add", "sub", "mul", "div", "pow"}
REDUCE = {"sum", "mean", "amax", "amin", "max", "min"}
GEMM = {"mm", "matmul", "bmm", "linear"}

ALIASES = {
    "_softmax": "softmax",
    "_log_softmax": "log_softmax",
    "native_layer_norm": "layer_norm",
    "_fused_rms_norm": "rms_norm",
    "truediv": "div",
    "true_divide": "div",
    "divide": "div",
    "multiply": "mul",
    "subtract": "sub",
    "negative": "neg",
    "absolute": "abs",
    "t": "transpose",
    "swapaxes": "transpose",
    "swapdims": "transpose",
    "view": "reshape",
    "_unsafe_view": "reshape",
    "flatten": "reshape",
    "unsqueeze": "reshape",
    "squeeze": "reshape",
    "view_as": "reshape",
    "reshape_as": "reshape",
    "contiguous": "identity",
    "clone": "identity",
    "detach": "identity",
    "alias": "identity",
    "dropout": "identity",
    "lift_fresh": "identity",
    "to": "cast",
    "_to_copy": "cast",
    "float": "cast",
    "type": "cast",
    "type_as": "cast",
    "clip": "clamp",
    "__getitem__": "getitem",
}


def dtype_name(dtype) -> str | None:
    return None if dtype is None else str(dtype).removeprefix("torch.")


def _norm_dim(d: int, ndim: int) -> int:
    if not isinstance(d, int) or isinstance(d, bool) or not -max(ndim, 1) <= d < max(ndim, 1):
        raise Unsupported(f"bad dim {d!r} for a {ndim}-D tensor")
    return d % max(ndim, 1)


def _dims(dim, ndim: int) -> tuple[int, ...]:
    if dim is None or dim == [] or dim == ():
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        return tuple(sorted(_norm_dim(d, ndim) for d in dim))
    return (_norm_dim(dim, ndim),)


def _scalar(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def lower(name: str, args: list, kw: dict, shape=None, dtype=None) -> N:
    """One call (fx node, module call or aten op) as a canonical node. Never raises: what is not understood
    becomes N("unsupported"), which only matters if the output depends on it."""
    raw = name
    name = ALIASES.get(name.rstrip("_"), name.rstrip("_")) if not name.startswith("__") else ALIASES.get(name, name)
    try:
        node = _lower(name, args, kw)
        if raw in ("native_layer_norm", "_fused_rms_norm"):  # aten returns (out, statistics...)
            node.attrs["tuple"] = True
    except Unsupported as exc:
        node = N("unsupported", [a for a in args if isinstance(a, N)], {"name": raw, "why": str(exc)})
    if node.shape is None:
        node.shape = None if shape is None else tuple(shape)
    if node.dtype is None:
        node.dtype = dtype_name(dtype)
    return node


def _lower(name: str, args: list, kw: dict) -> N:
    """One canonical node for a call whose name is already canonical (ALIASES applied); raises Unsupported."""

    def arg(i, key, default=None):
        return args[i] if len(args) > i else kw.get(key, default)

    x = arg(0, "input", kw.get("self"))
    ndim = len(x.shape) if isinstance(x, N) and x.shape is not None else 0
    if name in ("softmax", "log_softmax", "layer_norm", "rms_norm"):
        return _lower_normalization(name, arg, kw, x, ndim)
    if name == "scaled_dot_product_attention":
        return _lower_attention(arg, kw)
    if name in ("mm", "bmm", "matmul", "linear", "addmm"):
        return _lower_gemm(name, args, kw, arg, x)
    if name in ("transpose", "permute", "T", "mT", "reshape", "expand", "identity", "cast"):
        return _lower_view(name, args, kw, x, ndim)
    if name in REDUCE:
        return _lower_reduce(name, arg, x, ndim)
    if name in ("getitem", "getattr") and isinstance(x, N):
        return _lower_access(name, args, x, ndim)
    return _lower_elementwise(name, args, kw, arg, x)


def _lower_normalization(name: str, arg, kw: dict, x, ndim: int) -> N:
    if name in ("softmax", "log_softmax"):
        dim = arg(1, "dim")
        if dim is None:  # nn.Softmax() legacy implicit dim
            dim = 0 if ndim in (0, 1, 3) else 1
        if kw.get("dtype") not in (None,) and dtype_name(kw.get("dtype")) != "float32":
            raise Unsupported(f"{name} with dtype={kw.get('dtype')}")
        return N(name, [x], {"dim": _norm_dim(dim, ndim)})
    shape = arg(1, "normalized_shape")
    shape = [shape] if isinstance(shape, int) else list(shape)
    if name == "layer_norm":
        w, b, eps = arg(2, "weight"), arg(3, "bias"), arg(4, "eps", 1e-5)
    else:
        w, b, eps = arg(2, "weight"), None, arg(3, "eps")
    eps = FP32_EPS if eps is None else float(eps)
    return N(name, [x, w, b], {"normalized_shape": shape, "eps": eps, "tuple": False})


def _lower_attention(arg, kw: dict) -> N:
    q, k, v = arg(0, "query"), arg(1, "key"), arg(2, "value")
    if arg(3, "attn_mask") is not None:
        raise Unsupported("attention with an attn_mask")
    if arg(4, "dropout_p", 0.0) != 0.0:
        raise Unsupported("attention with dropout")
    if kw.get("enable_gqa"):
        raise Unsupported("attention with enable_gqa")
    scale = arg(6, "scale")
    return N(
        "sdpa",
        [q, k, v],
        {"causal": bool(arg(5, "is_causal", False)), "scale": None if scale is None else float(scale)},
    )


def _lower_gemm(name: str, args: list, kw: dict, arg, x) -> N:
    if name in ("mm", "bmm", "matmul"):
        return N(name, [x, arg(1, "other", kw.get("mat2"))])
    if name == "linear":
        return N("linear", [x, arg(1, "weight"), arg(2, "bias")])
    # addmm, aten's nn.Linear: bias + x @ W.t()
    if kw.get("beta", 1) != 1 or kw.get("alpha", 1) != 1:
        raise Unsupported("addmm with alpha/beta != 1")
    mm = N("mm", [args[1], args[2]])
    return N("add", [mm, args[0]], {"addmm": True})


def _lower_view(name: str, args: list, kw: dict, x, ndim: int) -> N:
    """Transposes, reshapes and no-op copies: views of x, or x itself."""
    if name in ("transpose", "permute", "T", "mT"):
        return N("transpose", [x], {"last2": _swaps_last2(name, args, kw, ndim)})
    if name == "expand":
        raise Unsupported("expand")
    if name == "reshape":
        return N("reshape", [x])
    if name == "cast" and any(dtype_name(a) not in (None, "float32") for a in args[1:] if not isinstance(a, (N, str))):
        raise Unsupported("a dtype conversion")
    return N("identity", [x])


def _lower_reduce(name: str, arg, x, ndim: int) -> N:
    other = arg(1, "dim")
    if isinstance(other, N):
        raise Unsupported(f"torch.{name} of two tensors")
    keep = bool(arg(2, "keepdim", False))
    dims = _dims(other, ndim)
    tup = name in ("max", "min") and other is not None
    return N(name, [x], {"dims": list(dims), "keepdim": keep, "ndim": ndim, "tuple": tup})


def _lower_access(name: str, args: list, x: N, ndim: int) -> N:
    """x[i] and x.attr: the first output of an op that returns several (values, not indices), or a transpose."""
    if x.op == "unsupported":
        return x  # torch.sort(x).values: the reason is sort, not .values
    if name == "getitem":
        idx = args[1]
        if x.attrs.get("tuple") and idx == 0:
            return N(x.op, x.args, {**x.attrs, "tuple": False})
        if x.attrs.get("tuple"):
            raise Unsupported(f"output {idx} of {x.op} (indices / statistics)")
        raise Unsupported("indexing a tensor")
    attr = args[1]
    if attr == "values" and x.attrs.get("tuple"):
        return N(x.op, x.args, {**x.attrs, "tuple": False})
    if attr in ("T", "mT"):
        return N("transpose", [x], {"last2": attr == "mT" or ndim == 2})
    raise Unsupported(f"attribute .{attr}")


def _swaps_last2(name: str, args: list, kw: dict, ndim: int) -> bool:
    if name in ("T", "t"):
        return ndim == 2
    if name == "mT":
        return ndim >= 2
    if name == "permute":
        dims = args[1] if len(args) == 2 and isinstance(args[1], (list, tuple)) else args[1:] or kw.get("dims")
        dims = [_norm_dim(d, ndim) for d in dims]
        return ndim >= 2 and dims == list(range(ndim - 2)) + [ndim - 1, ndim - 2]
    d0, d1 = args[1] if len(args) > 1 else kw.get("dim0"), args[2] if len(args) > 2 else kw.get("dim1")
    return ndim >= 2 and {_norm_dim(d0, ndim), _norm_dim(d1, ndim)} == {ndim - 2, ndim - 1}


def _lower_elementwise(name: str, args: list, kw: dict, arg, x) -> N:
    if name in ("relu", "sigmoid", "tanh", "neg", "abs", "exp", "rsqrt", "sqrt", "silu"):
        return N(name, [x])
    if name == "gelu":
        return N("gelu", [x], {"approximate": arg(1, "approximate", "none")})
    if name == "leaky_relu":
        return N("leaky_relu", [x], {"slope": float(arg(1, "negative_slope", 0.01))})
    if name == "square":
        return N("pow", [x, 2])
    if name in ("clamp", "clamp_min", "clamp_max", "hardtanh", "relu6"):
        lo, hi = arg(1, "min"), arg(2, "max")
        if name == "clamp_max":
            lo, hi = None, arg(1, "max")
        elif name == "hardtanh":
            lo, hi = arg(1, "min_val", -1.0), arg(2, "max_val", 1.0)
        elif name == "relu6":
            lo, hi = 0.0, 6.0
        if isinstance(lo, N) or isinstance(hi, N):
            raise Unsupported("clamp with tensor bounds")
        return N("clamp", [x], {"min": None if lo is None else float(lo), "max": None if hi is None else float(hi)})
    if name in ("add", "sub", "mul", "div", "pow", "rsub"):
        a, b = x, arg(1, "other", kw.get("exponent"))
        alpha = kw.get("alpha", args[2] if len(args) > 2 and name in ("add", "sub", "rsub") else 1)
        if name == "div" and kw.get("rounding_mode") is not None:
            raise Unsupported(f"div with rounding_mode={kw['rounding_mode']}")
        if alpha != 1:
            if not _scalar(b):
                raise Unsupported(f"{name} with alpha={alpha}")
            b = b * alpha
        if name == "rsub":
            name, a, b = "sub", b, a
        if not isinstance(a, N) and not isinstance(b, N):
            raise Unsupported(f"{name} of two scalars")
        for v in (a, b):
            if not isinstance(v, N) and not _scalar(v):
                raise Unsupported(f"{name} with a {type(v).__name__} operand")
        return N(name, [a, b])
    raise Unsupported(f"op {name}")


# Modules lowered as calls: class name -> function (module, x, P) returning (name, args, kwargs), where
# P(attr) is the param node of the module's attribute (None when the attribute is None).
def _mod_norm(m, x, P):
    if type(m).__name__ == "LayerNorm":
        return "layer_norm", [x, list(m.normalized_shape), P("weight"), P("bias"), m.eps], {}
    return "rms_norm", [x, list(m.normalized_shape), P("weight"), m.eps], {}


MODULES = {
    "Linear": lambda m, x, P: ("linear", [x, P("weight"), P("bias")], {}),
    "LayerNorm": _mod_norm,
    "RMSNorm": _mod_norm,
    "Softmax": lambda m, x, P: ("softmax", [x, m.dim], {}),
    "LogSoftmax": lambda m, x, P: ("log_softmax", [x, m.dim], {}),
    "ReLU": lambda m, x, P: ("relu", [x], {}),
    "Sigmoid": lambda m, x, P: ("sigmoid", [x], {}),
    "Tanh": lambda m, x, P: ("tanh", [x], {}),
    "SiLU": lambda m, x, P: ("silu", [x], {}),
    "GELU": lambda m, x, P: ("gelu", [x], {"approximate": m.approximate}),
    "LeakyReLU": lambda m, x, P: ("leaky_relu", [x, m.negative_slope], {}),
    "Hardtanh": lambda m, x, P: ("clamp", [x, m.min_val, m.max_val], {}),
    "ReLU6": lambda m, x, P: ("clamp", [x, 0.0, 6.0], {}),
    "Identity": lambda m, x, P: ("identity", [x], {}),
    "Dropout": lambda m, x, P: ("identity", [x], {}),  # the harness runs both models in eval mode
    "Flatten": lambda m, x, P: ("reshape", [x], {}),
}


# Ops that launch no kernel in eager PyTorch: views, no-op copies and the graph's leaves.
_NO_KERNEL = {"input", "param", "identity", "reshape", "transpose", "getitem", "cast"}


def eager_kernels(out: N) -> list[dict]:
    """What eager PyTorch launches for the graph ending at `out`: one kernel per op, each reading its tensor
    operands and writing its result. The cost model (agentkern/targets/costmodel.py) prices the reference
    from this when the target GPU is not here to time it."""
    seen: set[int] = set()
    kernels: list[dict] = []

    def size(n) -> int:
        total = 1
        for d in n.shape or ():
            total *= int(d)
        return total

    def visit(n) -> None:
        if not isinstance(n, N) or id(n) in seen:
            return
        seen.add(id(n))
        for a in n.args:
            visit(a)
        if n.op in _NO_KERNEL or n.op == "unsupported":
            return
        operands = [a for a in n.args if isinstance(a, N)]
        record = {"op": n.op, "out": size(n), "in": sum(size(a) for a in operands)}
        if n.op in GEMM and len(operands) >= 2 and operands[0].shape and operands[1].shape:
            k = int(operands[0].shape[-1])
            record["flops"] = 2 * size(n) * k
        kernels.append(record)

    visit(out)
    return kernels
