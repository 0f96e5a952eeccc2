"""The graph family's vocabulary: each core ATen op the tracer may meet (graph_trace.py), and how the rendered
ModelNew computes it (graph_render.py). No torch here.

Three kinds of op:
- views, allocation, copies and casts: called as they are (`torch.ops.aten.permute.default(...)`), which
  the harness's op allowlist accepts (they compute nothing);
- elementwise ops: one C++ kernel over any broadcast and any strides, its operation a case of a switch
  whose C expression is here (EW), in double precision, stored in the output's dtype;
- everything else (reductions, softmax, scans, GEMM, convolution, pooling, norms, gather, concatenation,
  padding): a helper of the rendered file (kernels_dataset/templates/graph/) with its own C++ kernel.
"""

from __future__ import annotations

# Elementwise operations: name -> (operands, C expression over x, y, z and the parameters a, b, c).
EW: dict[str, tuple[int, str]] = {
    "copy": (1, "x"),
    "neg": (1, "-x"),
    "abs": (1, "std::fabs(x)"),
    "exp": (1, "std::exp(x)"),
    "expm1": (1, "std::expm1(x)"),
    "log": (1, "std::log(x)"),
    "log1p": (1, "std::log1p(x)"),
    "log2": (1, "std::log2(x)"),
    "sqrt": (1, "std::sqrt(x)"),
    "rsqrt": (1, "1.0 / std::sqrt(x)"),
    "reciprocal": (1, "1.0 / x"),
    "tanh": (1, "std::tanh(x)"),
    "sigmoid": (1, "1.0 / (1.0 + std::exp(-x))"),
    "relu": (1, "x > 0.0 ? x : (x != x ? x : 0.0)"),
    "gelu": (1, "0.5 * x * (1.0 + std::erf(x * 0.70710678118654752440))"),
    "gelu_tanh": (1, "0.5 * x * (1.0 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)))"),
    "silu": (1, "x / (1.0 + std::exp(-x))"),
    "mish": (1, "x * std::tanh(std::log1p(std::exp(x)))"),
    "hardsigmoid": (1, "std::fmin(std::fmax(x / 6.0 + 0.5, 0.0), 1.0)"),
    "hardswish": (1, "x * std::fmin(std::fmax(x + 3.0, 0.0), 6.0) / 6.0"),
    "sign": (1, "(double)((x > 0.0) - (x < 0.0))"),  # 0 for NaN, as torch's sign
    "erf": (1, "std::erf(x)"),
    "sin": (1, "std::sin(x)"),
    "cos": (1, "std::cos(x)"),
    "floor": (1, "std::floor(x)"),
    "ceil": (1, "std::ceil(x)"),
    "round": (1, "std::nearbyint(x)"),
    "trunc": (1, "std::trunc(x)"),
    "isnan": (1, "(double)(x != x)"),
    "isinf": (1, "(double)std::isinf(x)"),
    "logical_not": (1, "(double)(x == 0.0)"),
    "add": (2, "x + a * y"),
    "sub": (2, "x - a * y"),
    "mul": (2, "x * y"),
    "div": (2, "x / y"),
    "div_floor": (2, "std::floor(x / y)"),
    "div_trunc": (2, "std::trunc(x / y)"),
    "pow": (2, "std::pow(x, y)"),
    "maximum": (2, "(x != x || y != y) ? x + y : std::fmax(x, y)"),
    "minimum": (2, "(x != x || y != y) ? x + y : std::fmin(x, y)"),
    "fmax": (2, "std::fmax(x, y)"),
    "fmin": (2, "std::fmin(x, y)"),
    "eq": (2, "(double)(x == y)"),
    "ne": (2, "(double)(x != y)"),
    "gt": (2, "(double)(x > y)"),
    "ge": (2, "(double)(x >= y)"),
    "lt": (2, "(double)(x < y)"),
    "le": (2, "(double)(x <= y)"),
    "logical_and": (2, "(double)(x != 0.0 && y != 0.0)"),
    "logical_or": (2, "(double)(x != 0.0 || y != 0.0)"),
    "logical_xor": (2, "(double)((x != 0.0) != (y != 0.0))"),
    "atan2": (2, "std::atan2(x, y)"),
    "remainder": (2, "x - std::floor(x / y) * y"),
    "fmod": (2, "std::fmod(x, y)"),
    "where": (3, "x != 0.0 ? y : z"),
    "clamp": (1, "x != x ? x : std::fmin(std::fmax(x, a), b)"),
    "leaky_relu": (1, "x > 0.0 ? x : x * a"),
    "elu": (1, "x > 0.0 ? b * x : b * a * (std::exp(x * c) - 1.0)"),
    "softplus": (1, "x * a > b ? x : std::log1p(std::exp(x * a)) / a"),
    "pow_scalar": (1, "std::pow(x, a)"),
    "scalar_pow": (1, "std::pow(a, x)"),
}
EW_CODES = {name: i for i, name in enumerate(EW)}

# Views and copies whose output holds exactly their first operand's values, rearranged (an int64 value's range
# passes through them unchanged: graph_fuse.int_range).
SAME_VALUES = {
    "aten.alias.default",
    "aten.permute.default",
    "aten.view.default",
    "aten._unsafe_view.default",
    "aten.reshape.default",
    "aten.unsqueeze.default",
    "aten.squeeze.default",
    "aten.squeeze.dim",
    "aten.expand.default",
    "aten.t.default",
    "aten.transpose.int",
    "aten.clone.default",
    "aten.unfold.default",
}

# Always a view of their first operand, never a copy, their other arguments ints: a chain of them is one
# as_strided (graph_render.view_chains).
VIEWS = {
    "aten.alias.default",
    "aten.permute.default",
    "aten.view.default",
    "aten._unsafe_view.default",
    "aten.unsqueeze.default",
    "aten.squeeze.default",
    "aten.squeeze.dim",
    "aten.squeeze.dims",
    "aten.expand.default",
    "aten.t.default",
    "aten.transpose.int",
    "aten.select.int",
    "aten.slice.Tensor",
    "aten.narrow.default",
    "aten.unfold.default",
}

# Called as they are: they allocate, view, copy or cast.
NEUTRAL = SAME_VALUES | {
    "aten.squeeze.dims",
    "aten.select.int",
    "aten.slice.Tensor",
    "aten._to_copy.default",
    "aten.empty.memory_format",
    "aten.empty_strided.default",
    "aten.full.default",
    "aten.full_like.default",
    "aten.zeros.default",
    "aten.zeros_like.default",
    "aten.ones.default",
    "aten.ones_like.default",
    "aten.empty_like.default",
    "aten.arange.default",
    "aten.arange.start",
    "aten.arange.start_step",
    "aten.split.Tensor",
    "aten.split_with_sizes.default",
    "aten.unbind.int",
    "aten.narrow.default",
}

# aten op -> (EW name, how its arguments map): "xy" tensors or scalars as operands in order; the rest name
# parameters (a, b, c) by argument position or keyword, with defaults.
EW_OPS: dict[str, tuple[str, list, dict]] = {}


def _ew(ops: list[str], name: str, operands: int, params: dict | None = None) -> None:
    for op in ops:
        EW_OPS[op] = (name, list(range(operands)), params or {})


for _name in (
    "neg abs exp expm1 log log1p log2 sqrt rsqrt reciprocal tanh sigmoid relu silu mish hardsigmoid hardswish "
    "sign erf sin cos floor ceil round trunc isnan isinf logical_not"
).split():
    _ew([f"aten.{_name}.default"], _name, 1)
for _name in "mul div pow maximum minimum fmax fmin eq ne gt ge lt le logical_and logical_or logical_xor atan2 remainder fmod".split():
    _ew([f"aten.{_name}.Tensor", f"aten.{_name}.Scalar", f"aten.{_name}.default"], _name, 2)
_ew(["aten.pow.Tensor_Tensor"], "pow", 2)
_ew(["aten.pow.Tensor_Scalar"], "pow_scalar", 1, {"a": (1, "exponent", None)})
_ew(["aten.pow.Scalar"], "scalar_pow", 1, {"a": (0, "self", None)})
for _name in ("add", "sub"):
    _ew([f"aten.{_name}.Tensor", f"aten.{_name}.Scalar"], _name, 2, {"a": (2, "alpha", 1.0)})
_ew(["aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar"], "where", 3)
_ew(["aten.clamp.default"], "clamp", 1, {"a": (1, "min", "-inf"), "b": (2, "max", "inf")})
_ew(["aten.clamp_min.default"], "clamp", 1, {"a": (1, "min", "-inf"), "b": (9, "_", "inf")})
_ew(["aten.clamp_max.default"], "clamp", 1, {"a": (9, "_", "-inf"), "b": (1, "max", "inf")})
_ew(["aten.clamp_min.Tensor"], "maximum", 2)
_ew(["aten.clamp_max.Tensor"], "minimum", 2)
_ew(["aten.hardtanh.default"], "clamp", 1, {"a": (1, "min_val", -1.0), "b": (2, "max_val", 1.0)})
_ew(["aten.leaky_relu.default"], "leaky_relu", 1, {"a": (1, "negative_slope", 0.01)})
_ew(["aten.elu.default"], "elu", 1, {"a": (1, "alpha", 1.0), "b": (2, "scale", 1.0), "c": (3, "input_scale", 1.0)})
_ew(["aten.softplus.default"], "softplus", 1, {"a": (1, "beta", 1.0), "b": (2, "threshold", 20.0)})

# Everything else: aten op -> the rendered file's helper that computes it (graph/helpers.py.j2), and the C++
# kernel it needs (graph/kernels.cpp.j2).
HELPERS: dict[str, tuple[str, str]] = {
    "aten.sum.dim_IntList": ("_sum", "reduce"),
    "aten.sum.default": ("_sum", "reduce"),
    "aten.mean.dim": ("_mean", "reduce"),
    "aten.mean.default": ("_mean", "reduce"),
    "aten.amax.default": ("_amax", "reduce"),
    "aten.amin.default": ("_amin", "reduce"),
    "aten.prod.dim_int": ("_prod", "reduce"),
    "aten.prod.default": ("_prod", "reduce"),
    "aten.max.dim": ("_max_dim", "reduce"),
    "aten.min.dim": ("_min_dim", "reduce"),
    "aten.max.default": ("_amax", "reduce"),
    "aten.min.default": ("_amin", "reduce"),
    "aten.argmax.default": ("_argmax", "reduce"),
    "aten.argmin.default": ("_argmin", "reduce"),
    "aten.any.dim": ("_any", "reduce"),
    "aten.any.dims": ("_any", "reduce"),
    "aten.any.default": ("_any", "reduce"),
    "aten.all.dim": ("_all", "reduce"),
    "aten.all.default": ("_all", "reduce"),
    "aten.var.correction": ("_var", "reduce"),
    "aten.var_mean.correction": ("_var_mean", "reduce"),
    "aten.linalg_vector_norm.default": ("_vector_norm", "reduce"),
    "aten.logsumexp.default": ("_logsumexp", "reduce"),
    "aten._softmax.default": ("_softmax", "softmax"),
    "aten._log_softmax.default": ("_log_softmax", "softmax"),
    "agentkern.log_softmax_gather": ("_log_softmax_gather", "softmax"),  # graph_rewrite.py's
    "aten.cumsum.default": ("_cumsum", "scan"),
    "aten.cumprod.default": ("_cumprod", "scan"),
    "aten.mm.default": ("_mm", "gemm"),
    "aten.bmm.default": ("_bmm", "gemm"),
    "aten.addmm.default": ("_addmm", "gemm"),
    "aten.convolution.default": ("_convolution", "conv"),
    "aten.max_pool2d_with_indices.default": ("_max_pool", "pool"),
    "aten.max_pool3d_with_indices.default": ("_max_pool", "pool"),
    "aten.avg_pool2d.default": ("_avg_pool", "pool"),
    "aten.avg_pool3d.default": ("_avg_pool", "pool"),
    "aten.native_batch_norm.default": ("_batch_norm", "norm"),
    "aten._native_batch_norm_legit_no_training.default": ("_batch_norm_eval", "norm"),
    "aten._native_batch_norm_legit.default": ("_batch_norm", "norm"),
    "aten._native_batch_norm_legit.no_stats": ("_batch_norm_no_stats", "norm"),
    "aten.native_group_norm.default": ("_group_norm", "norm"),
    "aten.native_layer_norm.default": ("_layer_norm", "norm"),
    "aten.gather.default": ("_gather", "gather"),
    "aten.flip.default": ("_flip", "ew"),
    "aten.cat.default": ("_cat", "cat"),
    "aten.constant_pad_nd.default": ("_pad", ""),
    "aten.scalar_tensor.default": ("_scalar_tensor", ""),
    "aten.lift_fresh_copy.default": ("_clone", ""),
    "aten.copy.default": ("_copy", ""),
    "aten.masked_fill.Scalar": ("_masked_fill", "ew"),
    "aten.gelu.default": ("_gelu", "ew"),
}

OPS = NEUTRAL | set(EW_OPS) | set(HELPERS) | {"getitem"}
