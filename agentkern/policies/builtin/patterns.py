"""Match a canonical op graph (ir.py) against the families the templates implement.

The shape every family shares: `output = chain(core(inputs))`, where `core` is at most one heavy op reading
model inputs directly (softmax, a norm, a last-dim reduction, a GEMM, attention, or nothing: the elementwise
family)
and `chain` is a list of elementwise steps, each a unary op or a binary op whose other side is a python
scalar, a model input, or a parameter. The matcher walks back from the output: elementwise steps go on the
chain until the core is reached. Hand-written RMSNorm (`x * rsqrt(mean(x^2, -1, keepdim) + eps)`) is found
as a core by pattern; a scale before a softmax (`softmax(x * s)`) becomes its `scale`.
"""

from __future__ import annotations

import math

from agentkern.policies.builtin.ir import GEMM, REDUCE, UNARY, N, Unsupported, _scalar

POWERS = {1, 2, 3, 0.5, -0.5, -1}


class Names:
    """Keys for the parameters a spec refers to: key -> attribute path on the model."""

    def __init__(self) -> None:
        self.paths: dict[str, str] = {}

    def key(self, path: str, preferred: str | None = None) -> str:
        for k, p in self.paths.items():
            if p == path:
                return k
        k = preferred if preferred and preferred not in self.paths else f"p{len(self.paths)}"
        self.paths[k] = path
        return k

    def rename(self, old: str, new: str) -> str:
        if new in self.paths:
            return old
        self.paths[new] = self.paths.pop(old)
        return new


def skip(n):
    """Through ops that change nothing a kernel sees: copies, casts to fp32, reshapes keeping the last dim."""
    while isinstance(n, N):
        if n.op == "identity" or (n.op == "reshape" and _same_last(n, n.args[0]) and n.args[0].op != "transpose"):
            n = n.args[0]
        else:
            break
    return n


def _same_last(a: N, b: N) -> bool:
    return a.shape is not None and b.shape is not None and tuple(a.shape[-1:]) == tuple(b.shape[-1:])


def _leaf(n) -> bool:
    return isinstance(n, N) and skip(n).op in ("input", "param")


def _input(n: N, what: str) -> int:
    s = skip(n)
    if s.op != "input":
        raise Unsupported(f"{what} of a computed tensor ({s!r}): the built-in kernels read a model input directly")
    return s.attrs["index"]


def _param(n, names: Names, preferred: str, what: str) -> str | None:
    if n is None:
        return None
    s = skip(n)
    if s.op != "param":
        raise Unsupported(f"the {what} of the model's {preferred} is not a parameter ({s!r})")
    return names.key(s.attrs["path"], preferred)


def _bcast(operand: N, result: tuple) -> str:
    shape = tuple(operand.shape or ())
    if shape == tuple(result):
        return "full"
    if math.prod(shape) == 1:
        return "one"
    if result and shape and shape[-1] == result[-1] and all(d == 1 for d in shape[:-1]) and len(shape) <= len(result):
        return "lastdim"
    raise Unsupported(f"an operand of shape {list(shape)} broadcast against {list(result)}")


def _operand(v, result: tuple, names: Names) -> dict:
    if _scalar(v):
        return {"scalar": float(v)}
    s = skip(v)
    if s.op == "input":
        return {"input": s.attrs["index"], "bcast": _bcast(v, result)}
    return {"param": names.key(s.attrs["path"]), "bcast": _bcast(v, result)}


def _unary(n: N) -> dict:
    if n.op == "gelu":
        if n.attrs["approximate"] not in ("none", "tanh"):
            raise Unsupported(f"gelu approximate={n.attrs['approximate']!r}")
        return {"op": "gelu", "approximate": n.attrs["approximate"]}
    if n.op == "leaky_relu":
        return {"op": "leaky_relu", "slope": n.attrs["slope"]}
    if n.op == "clamp":
        return {"op": "clamp", "min": n.attrs["min"], "max": n.attrs["max"]}
    return {"op": n.op}


def _binary(n: N, names: Names) -> tuple[dict, N]:
    """(chain step, the side the chain continues on)."""
    a, b = n.args
    computed = [isinstance(v, N) and not _leaf(v) for v in (a, b)]
    if _scalar(b) or (computed[0] and not computed[1]) or (not any(computed) and skip(a).op == "input"):
        main, other, swapped = a, b, False
    elif _scalar(a) or (computed[1] and not computed[0]) or (not any(computed) and skip(b).op == "input"):
        main, other, swapped = b, a, True
    elif all(computed):
        raise Unsupported(f"{n.op} combines two computed tensors ({skip(a)!r}, {skip(b)!r}): not a chain")
    else:
        raise Unsupported(f"{n.op} of two parameters")
    if tuple(main.shape or ()) != tuple(n.shape or ()):
        raise Unsupported(
            f"{n.op} broadcasts {skip(main)!r} to {list(n.shape or ())}: only last-dim "
            "reductions feeding softmax/norm patterns are recognised"
        )
    op = n.op
    if op == "pow":
        if swapped or not _scalar(other) or float(other) not in POWERS:
            raise Unsupported(f"pow with exponent {other!r}: only {sorted(POWERS)}")
        return {"op": "pow", "exponent": float(other)}, main
    if swapped and op in ("sub", "div"):
        op = "r" + op
    return {"op": op, **_operand(other, n.shape, names)}, main


# ---- cores ---------------------------------------------------------------------------------------------
def _softmax(n: N) -> tuple[str, dict]:
    x = n.args[0]
    ndim = len(x.shape)
    if n.attrs["dim"] != ndim - 1:
        raise Unsupported(f"{n.op} over dim {n.attrs['dim']} of a {ndim}-D tensor: only the last dim is supported")
    s, scale = skip(x), 1.0
    if s.op in ("mul", "div"):
        a, b = s.args
        if s.op == "mul" and _scalar(a):
            a, b = b, a
        if isinstance(a, N) and _scalar(b) and float(b) != 0:
            scale, s = (float(b) if s.op == "mul" else 1.0 / float(b)), a
    return n.op, {"dim": -1, "scale": scale, "input": _input(s, n.op)}


def _residual_sum(x: N) -> tuple[int, int] | None:
    """norm(a + b) with a, b two model inputs of the norm's shape (a post-norm residual block): the kernel
    adds them while it reads the row, so the sum never goes to memory. (input, residual) indices, or None."""
    s = skip(x)
    if s.op != "add" or len(s.args) != 2 or not all(isinstance(v, N) and skip(v).op == "input" for v in s.args):
        return None
    if any(tuple(v.shape or ()) != tuple(s.shape or ()) for v in s.args):
        return None
    return skip(s.args[0]).attrs["index"], skip(s.args[1]).attrs["index"]


def _norm(n: N, names: Names) -> tuple[str, dict]:
    x, w, b = n.args
    ns = list(n.attrs["normalized_shape"])
    if list(x.shape[len(x.shape) - len(ns) :]) != ns:
        raise Unsupported(f"{n.op} over {ns} of a tensor of shape {list(x.shape)}")
    family = "layernorm" if n.op == "layer_norm" else "rmsnorm"
    attrs = {"eps": n.attrs["eps"], "affine": w is not None, "bias": b is not None, "normalized_shape": ns}
    residual = _residual_sum(x)
    if residual:
        attrs["input"], attrs["residual"] = residual
    else:
        attrs["input"] = _input(x, family)
    _param(w, names, "weight", family)
    _param(b, names, "bias", family)
    return family, attrs


def _reduce(n: N) -> tuple[str, dict]:
    if n.attrs.get("tuple"):
        raise Unsupported(f"torch.{n.op}(x, dim) returns values and indices: only .values / [0] is supported")
    ndim, dims = n.attrs["ndim"], n.attrs["dims"]
    if len(dims) != 1:
        raise Unsupported(f"{n.op} over dims {dims} of a {ndim}-D tensor: one dim at a time is supported")
    attrs = {"op": n.op, "dim": dims[0] - ndim, "keepdim": n.attrs["keepdim"], "input": _input(n.args[0], n.op)}
    if dims[0] != ndim - 1:  # columns of [outer, n, inner]: a template must say it reads this (templates.py)
        attrs["inner_dims"] = ndim - 1 - dims[0]
    return "reduce", attrs


def _gemm_operand(n: N, names: Names, preferred: str) -> dict:
    s, trans = n, False
    while True:
        s = skip(s)
        if s.op == "transpose":
            if not s.attrs["last2"]:
                raise Unsupported("a GEMM operand permuted other than by swapping its last two dims")
            trans, s = not trans, s.args[0]
        elif s.op == "reshape" and not trans and _same_last(s, s.args[0]):
            s = s.args[0]
        else:
            break
    if s.op == "input":
        return {"input": s.attrs["index"], "trans": trans}
    if s.op == "param":
        return {"param": names.key(s.attrs["path"], preferred), "trans": trans}
    raise Unsupported(f"a GEMM operand is computed ({s!r}): the built-in kernels read inputs or parameters")


def _gemm(n: N, names: Names) -> tuple[str, dict, list]:
    a, b = n.args[0], n.args[1]
    sa, sb = list(a.shape), list(b.shape)
    pre: list = []
    if n.op == "linear":
        if len(sb) != 2:
            raise Unsupported(f"linear with a weight of shape {sb}")
        A, B = _gemm_operand(a, names, "weight"), _gemm_operand(b, names, "weight")
        B["trans"] = not B["trans"]
        sb = [sb[1], sb[0]]
        if n.args[2] is not None:
            pre = [{"op": "add", "param": _param(n.args[2], names, "bias", "linear"), "bcast": "lastdim"}]
    else:
        A, B = _gemm_operand(a, names, "weight"), _gemm_operand(b, names, "weight")
    if len(sa) >= 2 and len(sb) == 2 and (len(sa) == 2 or not A["trans"]) and n.op != "bmm":
        batch, M, batched = 1, math.prod(sa[:-1]), False
    elif len(sa) == 3 and len(sb) == 3 and sa[0] == sb[0] and n.op in ("bmm", "matmul"):
        batch, M, batched = sa[0], sa[1], True
    else:
        raise Unsupported(f"{n.op} of shapes {sa} and {sb}: only 2-D @ 2-D, N-D @ 2-D and 3-D batched")
    if sa[-1] != sb[-2]:
        raise Unsupported(f"{n.op} of shapes {sa} and {sb}")
    if n.op == "linear" or ("param" in B and B["trans"] and "input" in A and not batched):
        family = "linear"
    else:  # 3-D operands are bmm's even with one batch: the kernel takes and returns 3-D tensors
        family = "bmm" if batched else "matmul"
    return family, {"a": A, "b": B, "batch": batch, "M": M, "N": sb[-1], "K": sa[-1]}, pre


def _mean_sq(n):
    """(x, eps) for mean(x^2, last, keepdim) [+ eps], else None."""
    n = skip(n)
    eps = 0.0
    if isinstance(n, N) and n.op == "add":
        a, b = n.args
        if _scalar(a):
            a, b = b, a
        if not _scalar(b):
            return None
        n, eps = skip(a), float(b)
    if not isinstance(n, N) or n.op != "mean" or not n.attrs["keepdim"] or n.attrs["dims"] != [n.attrs["ndim"] - 1]:
        return None
    sq = skip(n.args[0])
    if sq.op == "pow" and sq.args[1] == 2:
        return skip(sq.args[0]), eps
    if sq.op == "mul" and isinstance(sq.args[0], N) and skip(sq.args[0]) is skip(sq.args[1]):
        return skip(sq.args[0]), eps
    return None


def _handwritten_rms(n: N):
    """x * rsqrt(ms + eps), x * (ms + eps) ** -0.5, x / sqrt(ms + eps), x / (ms + eps) ** 0.5 -> (x, eps)."""
    a, b = n.args
    if not (isinstance(a, N) and isinstance(b, N)):
        return None
    pairs = [(a, b), (b, a)] if n.op == "mul" else [(a, b)]
    for x, den in pairs:
        d = skip(den)
        if n.op == "mul" and d.op == "rsqrt" or d.op == "pow" and d.args[1] == (-0.5 if n.op == "mul" else 0.5):
            found = _mean_sq(d.args[0])
        elif n.op == "div" and d.op == "sqrt":
            found = _mean_sq(d.args[0])
        else:
            found = None
        if found and found[0] is skip(x):
            return found
    return None


def _attention(n: N) -> tuple[str, dict]:
    q, k, v = n.args
    shapes = [tuple(t.shape) if isinstance(t, N) and t.shape is not None else None for t in (q, k, v)]
    if None in shapes or min(len(s) for s in shapes) < 2:
        raise Unsupported("attention of tensors with unknown or fewer than 2 dims")
    (*qb, _, d), (*kb, skv, dk), (*vb, sv, _) = shapes
    if not (qb == kb == vb) or dk != d or sv != skv:
        raise Unsupported(
            f"attention with broadcast or mismatched shapes q{list(shapes[0])} k{list(shapes[1])} v{list(shapes[2])}"
        )
    scale = n.attrs["scale"] if n.attrs["scale"] is not None else 1.0 / math.sqrt(d)
    return "attention", {
        "causal": n.attrs["causal"],
        "scale": scale,
        "default_scale": n.attrs["scale"] is None,  # 1/sqrt(head dim): a kernel may take it from its inputs
        "q": _input(q, "attention"),
        "k": _input(k, "attention"),
        "v": _input(v, "attention"),
    }


def _core(n: N, names: Names):
    if n.op == "sdpa":
        return (*_attention(n), [])
    if n.op in ("softmax", "log_softmax"):
        return (*_softmax(n), [])
    if n.op in ("layer_norm", "rms_norm"):
        if n.attrs.get("tuple"):
            raise Unsupported(f"{n.op} statistics are used")
        return (*_norm(n, names), [])
    if n.op in REDUCE:
        return (*_reduce(n), [])
    if n.op in GEMM:
        return _gemm(n, names)
    if n.op in ("mul", "div"):
        found = _handwritten_rms(n)
        if found:
            x, eps = found
            attrs = {
                "eps": eps,
                "affine": False,
                "bias": False,
                "normalized_shape": [x.shape[-1]],
                "input": _input(x, "rmsnorm"),
            }
            return "rmsnorm", attrs, []
    return None


ROW_OPS = ("softmax", "log_softmax")  # a GEMM's row operation: over the last dim of its (epilogued) output


def _gemm_then_row_op(out: N) -> dict | None:
    """softmax / log_softmax over the last dim of a GEMM's output, with an elementwise epilogue between (a
    classifier head, gemm_gelu_softmax): the GEMM family with attrs["row_op"], which its C++ template applies to
    each row of C once the product is done. None where the output is not that."""
    node = skip(out)
    if node.op not in ROW_OPS or node.dtype not in (None, "float32"):
        return None
    x = node.args[0]
    if x.shape is None or node.attrs["dim"] != len(x.shape) - 1:
        return None
    try:
        inner = match(x)
    except Unsupported:
        return None
    if inner["family"] not in ("matmul", "linear", "bmm") or "row_op" in inner["attrs"]:  # one row op, not two
        return None
    inner["attrs"]["row_op"] = node.op
    return inner


def match(out: N) -> dict:
    """{family, attrs, epilogue, param_paths} for the graph ending at `out`; raises Unsupported."""
    found = _gemm_then_row_op(out)
    if found is not None:
        return found
    names = Names()
    chain: list[dict] = []
    node = out
    while True:
        node = skip(node)
        found = _core(node, names)
        if found:
            family, attrs, pre = found
            break
        if node.op == "input":
            family, attrs, pre = "elementwise", {"input": node.attrs["index"]}, []
            break
        if node.op in UNARY:
            chain.append(_unary(node))
            node = node.args[0]
        elif node.op in ("add", "sub", "mul", "div", "pow"):
            step, node = _binary(node, names)
            chain.append(step)
        elif node.op == "param":
            raise Unsupported("the output is computed from parameters only")
        elif node.op == "unsupported":
            raise Unsupported(f"{node.attrs['name']} is not supported ({node.attrs['why']})")
        else:
            raise Unsupported(f"{node.op} is not supported here ({node!r})")
    chain = pre + chain[::-1]
    _fold_affine(family, attrs, chain, names)
    if family == "reduce" and any("input" in s or "param" in s for s in chain):
        raise Unsupported("a tensor operand after a reduction")
    if family == "elementwise":
        attrs["chain"], chain = chain, []
    if family in ("linear",):
        attrs["bias"] = bool(chain) and chain[0].get("param") == "bias"
    used = {s["param"] for s in chain + attrs.get("chain", []) if "param" in s}
    used |= {attrs[k]["param"] for k in ("a", "b") if k in attrs and "param" in attrs[k]}
    if family in ("layernorm", "rmsnorm"):
        used |= {k for k in ("weight", "bias") if attrs["affine" if k == "weight" else "bias"]}
    return {
        "family": family,
        "attrs": attrs,
        "epilogue": chain,
        "param_paths": {k: v for k, v in names.paths.items() if k in used},
    }


def _fold_affine(family: str, attrs: dict, chain: list, names: Names) -> None:
    """norm(x) * w [+ b] with w, b last-dim parameters: the norm's own affine (and linear's bias naming)."""

    def is_param(step, op):
        return step.get("op") == op and step.get("bcast") == "lastdim" and "param" in step

    if family in ("rmsnorm", "layernorm") and not attrs["affine"] and chain and is_param(chain[0], "mul"):
        if names.rename(chain[0]["param"], "weight") == "weight":
            attrs["affine"] = True
            chain.pop(0)
            if family == "layernorm" and not attrs["bias"] and chain and is_param(chain[0], "add"):
                if names.rename(chain[0]["param"], "bias") == "bias":
                    attrs["bias"] = True
                    chain.pop(0)
    if family in ("linear", "matmul") and chain and is_param(chain[0], "add") and chain[0]["param"] != "bias":
        chain[0]["param"] = names.rename(chain[0]["param"], "bias")
