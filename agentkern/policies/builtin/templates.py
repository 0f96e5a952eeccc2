"""Parametrised kernel templates: kernels_dataset/templates/<template>/<backend>.py.j2 and <backend>.json.

`render(spec, params)` turns an OpSpec (recognize.py) and one parameter set into a whole solution file
(a `ModelNew`, KernelBench convention). The JSON beside each template lists its parameters:
`{"params": {name: [candidates]}, "default": {...}, "stage": {name: 1|2|3}}`, stage 1 = tiling,
vectorisation and threading, 2 = fusion and algorithmic variants, 3 = finer scheduling; and what it can
render: "dtypes" (default ["float32"]), "attrs" (the OPTIONAL_ATTRS of a spec it reads, default none) and
"title" (its name in messages, default "<backend display> <template>"); and "paths": the code paths its kernel
takes at run time that read only some of the parameters (name -> {"reads": [...]} or {"ignores": [...]}, and
numbers its dispatch and kernel_paths.py share; rendered as `paths`). No torch here.
"""

from __future__ import annotations

import json
import math
import struct
from functools import cache
from pathlib import Path

from agentkern import backends
from agentkern.config import dataset_dir
from agentkern.types import OpSpec

# Spec family -> template directory. log_softmax shares softmax's; matmul, linear and bmm share one GEMM.
TEMPLATE_OF = {
    "softmax": "softmax",
    "log_softmax": "softmax",
    "layernorm": "layernorm",
    "rmsnorm": "rmsnorm",
    "reduce": "reduce",
    "elementwise": "elementwise",
    "matmul": "matmul",
    "linear": "matmul",
    "bmm": "matmul",
    "attention": "attention",
    "graph": "graph",  # the whole traced graph, op by op (graph_trace.py, graph_render.py)
}


class TemplateError(ValueError):
    """The spec or the parameters cannot be rendered; the message says why (one line)."""


def template_dir() -> Path:
    return dataset_dir() / "templates"


def families() -> list[str]:
    return list(TEMPLATE_OF)


# Spec attributes that only some templates read: a template lists those it reads in its JSON's "attrs".
OPTIONAL_ATTRS = {
    "residual": "a residual sum",
    "row_op": "a softmax over the output's rows",
    "inner_dims": "a reduction over a dim other than the last",
}
SHORT_DTYPES = {"float16": "fp16", "bfloat16": "bf16"}  # in messages


def _template_name(family: str) -> str:
    if family not in TEMPLATE_OF:
        raise TemplateError(f"no template for family {family!r}: known {', '.join(TEMPLATE_OF)}")
    return TEMPLATE_OF[family]


@cache
def _meta_cached(path: str) -> dict:
    meta = json.loads(Path(path).read_text())
    params, default, stage = meta["params"], meta["default"], meta["stage"]
    if set(params) != set(default) or set(params) != set(stage):
        raise TemplateError(f"{path}: params, default and stage must name the same parameters")
    bad = [k for k, v in default.items() if v not in params[k]]
    if bad:
        raise TemplateError(f"{path}: default value of {bad[0]} is not among its candidates")
    for name, code_path in meta.get("paths", {}).items():
        listed = [key for key in ("reads", "ignores") if key in code_path]
        unknown = [k for key in listed for k in code_path[key] if k not in params]
        if len(listed) != 1 or unknown:
            raise TemplateError(
                f"{path}: path {name} must list the parameters it reads or ignores, one of them (unknown: {unknown})"
            )
    return meta


def _meta(family: str, backend: str) -> dict:
    path = template_dir() / _template_name(family) / f"{backend}.json"
    if not path.is_file():
        raise TemplateError(f"no {backend} template for {family} ({path} missing)")
    return _meta_cached(str(path))


def _title(meta: dict, template: str, backend: str) -> str:
    return meta.get("title") or f"{backends.get(backend).display} {template}"


def _dtypes(meta: dict) -> list[str]:
    return meta.get("dtypes", ["float32"])


def _templates_with(key: str, value: str) -> list[tuple[str, dict]]:
    """(title, meta) of the templates whose JSON lists `value` under `key` ("dtypes", "attrs"), for messages."""
    found = []
    for path in sorted(template_dir().glob("*/*.json")):
        if path.parent.name.startswith("_") or path.stem not in backends.names():
            continue
        meta = _meta_cached(str(path))
        if value in (_dtypes(meta) if key == "dtypes" else meta.get(key, [])):
            found.append((_title(meta, path.parent.name, path.stem), meta))
    return found


def _check_capabilities(spec: dict, family: str, backend: str) -> None:
    """The template renders the spec's dtype and reads its optional attributes, or a TemplateError says so
    (and which template does)."""
    meta, dtype = _meta(family, backend), spec.get("dtype")
    dtypes = _dtypes(meta)
    if dtype not in dtypes:
        others = _templates_with("dtypes", dtype)
        extra = [SHORT_DTYPES.get(d, d) for _, m in others for d in _dtypes(m) if d not in dtypes]
        hint = f" ({'/'.join(dict.fromkeys(extra))}: only the {', '.join(t for t, _ in others)})" if others else ""
        raise TemplateError(
            f"the {backend} {family} template supports {' and '.join(dtypes)} only, the problem uses {dtype}" + hint
        )
    for attr, words in OPTIONAL_ATTRS.items():
        if attr in spec["attrs"] and attr not in meta.get("attrs", []):
            others = [title for title, _ in _templates_with("attrs", attr)]
            hint = f" (only the {', '.join(others)} does)" if others else ""
            raise TemplateError(f"no {backend} {family} template reads {words}{hint}")


def why_not_renderable(spec: dict, backend: str) -> str | None:
    """Why the backend's template cannot render the recognised spec at all (no template for its family, its dtype,
    an attribute it does not read), or None: said once before a search, not as a verdict on every candidate."""
    try:
        _check_capabilities(spec, spec["family"], backend)
    except TemplateError as exc:
        return str(exc)
    return None


def _runs_here(meta: dict, name: str, value, features: frozenset | None) -> bool:
    """A value marked in the template's "requires" (e.g. an AVX-512 micro-kernel needs avx512f) is only
    offered where the host has that feature; features=None means "do not filter" (rendering, tests)."""
    need = meta.get("requires", {}).get(name, {}).get(str(value))
    return need is None or features is None or need in features


def param_space(
    family: str, backend: str = "cpp", stage_max: int = 3, features: frozenset | None = None
) -> dict[str, list]:
    meta = _meta(family, backend)
    return {
        k: [x for x in v if _runs_here(meta, k, x, features)]
        for k, v in meta["params"].items()
        if meta["stage"][k] <= stage_max
    }


def default_params(family: str, backend: str = "cpp", features: frozenset | None = None) -> dict:
    """The template's defaults, with its "prefer" overrides for the features the host has, in the JSON's order.
    A key may name several features joined by "+" ("intel+avx512f"): it applies where the host has them all."""
    meta = _meta(family, backend)
    params = dict(meta["default"])
    for key, overrides in meta.get("prefer", {}).items():
        if features is not None and all(feature in features for feature in key.split("+")):
            params.update(overrides)
    return params


def host_features(simd_width_bits: int | None, amx_bf16: bool = False) -> frozenset:
    """The CPU features the templates' "requires" name, from the target's detected SIMD width and whether it has
    AMX-BF16 tiles (a CPU target's peak_tflops then names "amx_bf16": targets/host.py)."""
    wide = (simd_width_bits or 0) >= 512
    return frozenset({"avx512f"} if wide else set()) | frozenset({"amx_bf16"} if wide and amx_bf16 else set())


def target_features(target) -> frozenset:
    """The template features of a CPU target (this host): host_features of its SIMD width and AMX tiles,
    "avx512_halves" where its AVX-512 runs on 256-bit units (targets/host.py: AMD Zen 4), "intel" on an Intel
    CPU (at any width) and "zen3" on an AMD Zen 3."""
    features = host_features(target.simd_width_bits, "amx_bf16" in target.peak_tflops)
    if target.kind != "cpu":
        return features
    from agentkern.targets.host import avx512_in_halves, intel_cpu, zen3_cpu

    if "avx512f" in features and avx512_in_halves():
        features |= {"avx512_halves"}
    if intel_cpu():
        features |= {"intel"}
    if zen3_cpu():
        features |= {"zen3"}
    return features


def param_stages(family: str, backend: str = "cpp") -> dict[str, int]:
    return dict(_meta(family, backend)["stage"])


def code_paths(family: str, backend: str = "cpp") -> dict[str, dict]:
    """The template's "paths" (see the module's docstring); {} where it lists none or has no template."""
    try:
        return _meta(family, backend).get("paths", {})
    except TemplateError:
        return {}


def cfloat(value) -> str:
    """A C++ float literal holding exactly float32(value) (hex float), or inf / nan."""
    f = struct.unpack("f", struct.pack("f", float(value)))[0]
    if math.isnan(f):
        return '__builtin_nanf("")'
    if math.isinf(f):
        return "__builtin_inff()" if f > 0 else "(-__builtin_inff())"
    return f"{f.hex()}f" if f != 0 else ("-0.0f" if math.copysign(1, f) < 0 else "0.0f")


def tlfloat(value) -> str:
    """A literal for a Triton kernel that is exactly float32(value), the constant torch uses for a Python scalar
    with a float32 tensor (Triton would round the literal to float32 the same way; writing the rounded value
    keeps the source honest about it). inf and nan as a @triton.jit function can spell them."""
    f = struct.unpack("f", struct.pack("f", float(value)))[0]
    if math.isnan(f):
        return 'float("nan")'
    if math.isinf(f):
        return 'float("inf")' if f > 0 else '(-float("inf"))'
    return repr(f) if f >= 0 and math.copysign(1, f) > 0 else f"({f!r})"


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (>= 1), as triton.next_power_of_2."""
    return 1 << max(int(n) - 1, 0).bit_length()


def _raise(message: str):
    raise TemplateError(message)


@cache
def _environment(root: str):
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(root),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["cfloat"] = cfloat
    env.filters["tlfloat"] = tlfloat
    env.filters["next_pow2"] = next_pow2
    env.filters["prod"] = math.prod
    env.filters["tuple_repr"] = lambda v: repr(tuple(v))
    env.globals["raise"] = _raise
    return env


def describe_chain(chain: list[dict], value: str = "v") -> str:
    """The chain as an expression, for docstrings: relu(v * 2.0) + bias."""
    for s in chain:
        other = repr(s["scalar"]) if "scalar" in s else f"input{s['input']}" if "input" in s else s.get("param", "")
        op = s["op"]
        if op in ("add", "sub", "mul", "div"):
            value = f"({value} { {'add': '+', 'sub': '-', 'mul': '*', 'div': '/'}[op] } {other})"
        elif op in ("rsub", "rdiv"):
            value = f"({other} {'-' if op == 'rsub' else '/'} {value})"
        elif op == "pow":
            value = f"{value} ** {s['exponent']:g}"
        elif op == "gelu" and s.get("approximate") == "tanh":
            value = f"gelu_tanh({value})"
        else:
            value = f"{op}({value})"
    return value


def summary(spec: OpSpec) -> str:
    a, fam = spec["attrs"], spec["family"]
    if fam == "graph":
        from agentkern.policies.builtin.graph_render import summary as graph_summary

        return graph_summary(spec)
    if fam in ("softmax", "log_softmax"):
        core = f"{fam}(x{' * ' + repr(a['scale']) if a['scale'] != 1.0 else ''}, dim=-1)"
    elif fam in ("layernorm", "rmsnorm"):
        x = f"input{a['input']} + input{a['residual']}" if "residual" in a else "x"
        core = f"{fam}({x}, {a['normalized_shape']}, eps={a['eps']:g}{', weight' if a['affine'] else ''}{', bias' if a.get('bias') else ''})"
    elif fam == "reduce":
        core = f"x.{a['op']}(dim=-1{', keepdim=True' if a['keepdim'] else ''})"
    elif fam == "attention":
        core = (
            f"softmax(input{a['q']} @ input{a['k']}^T * {a['scale']:.6g}{', causal' if a['causal'] else ''})"
            f" @ input{a['v']}"
        )
    elif fam == "elementwise":
        return describe_chain(a["chain"], f"input{a['input']}")
    else:
        ta, tb = ("^T" if a["a"]["trans"] else ""), ("^T" if a["b"]["trans"] else "")
        name = lambda o: f"input{o['input']}" if "input" in o else o["param"]  # noqa: E731
        core = f"{name(a['a'])}{ta} @ {name(a['b'])}{tb}"
    described = describe_chain(spec.get("epilogue", []), core)
    return f"{a['row_op']}({described}, dim=-1)" if a.get("row_op") else described


def _check_params(family: str, backend: str, params: dict) -> dict:
    space, merged = param_space(family, backend), default_params(family, backend)
    for k, v in (params or {}).items():
        if k not in space:
            raise TemplateError(f"unknown parameter {k!r} for the {family} template (has {', '.join(space)})")
        if not any(v == c and type(v) is type(c) for c in space[k]):
            raise TemplateError(f"parameter {k}={v!r} is not one of {space[k]}")
        merged[k] = v
    return merged


def _operands(spec: dict, chain: list[dict]) -> tuple[list[dict], list[dict]]:
    """Number the chain's tensor operands (t = index into the kernel's operand pointers)."""
    operands, out = [], []
    for s in chain:
        s = dict(s)
        if "input" in s or "param" in s:
            key = ("input", s["input"]) if "input" in s else ("param", s["param"])
            desc = {"kind": key[0], "bcast": s["bcast"]}
            if key[0] == "input":
                desc.update(index=s["input"], name=f"input {s['input']}")
            else:
                desc.update(path=spec["param_paths"][s["param"]], name=spec["param_paths"][s["param"]])
            if desc not in operands:
                operands.append(desc)
            s["t"] = operands.index(desc)
        out.append(s)
    return out, operands


def render(spec: OpSpec, params: dict | None = None, backend: str = "cpp") -> str:
    """A whole solution file for `spec` with `params` (missing ones take the defaults)."""
    family = spec.get("family")
    if family is None:
        raise TemplateError(f"nothing to render: the problem was not recognised ({spec.get('reason')})")
    dtype = spec.get("dtype")
    _check_capabilities(spec, family, backend)
    template = _template_name(family)
    p = _check_params(family, backend, params or {})
    chain = spec["attrs"]["chain"] if family == "elementwise" else spec.get("epilogue", [])
    chain, operands = _operands(spec, chain)
    if dtype != "float32" and (operands or any("param" in spec["attrs"].get(k, {}) for k in ("a", "b"))):
        raise TemplateError(f"the {dtype} GEMM template takes two input matrices and no tensor operands")
    env = _environment(str(template_dir()))
    extra = {}
    if family == "graph":
        from agentkern.policies.builtin.graph_render import context

        extra = context(spec)
    return env.get_template(f"{template}/{backend}.py.j2").render(
        spec=spec,
        p=p,
        chain=chain,
        operands=operands,
        template=template,
        summary=summary(spec),
        params_text=json.dumps(p, sort_keys=True),
        paths=code_paths(family, backend),
        **extra,
    )
