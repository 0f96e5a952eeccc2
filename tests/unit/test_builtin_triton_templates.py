"""The built-in policy's Triton templates without the harness: their parameters are a contract (the cost model
reads them), every parameter value renders valid Python, and what they refuse. The rendered kernels judged by
the harness: tests/harness/test_builtin_triton.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builtin_problems import lazy_specs
from triton_problems import TRITON_CASES, write_triton_problems

from agentkern.policies.builtin import templates as T


@pytest.fixture(scope="module")
def problems(tmp_path_factory) -> dict[str, Path]:
    return write_triton_problems(tmp_path_factory.mktemp("triton-problems"))


@pytest.fixture(scope="module")
def specs(problems) -> dict[str, dict]:
    return lazy_specs(problems)


# ---- metadata: the parameter names and values are a contract (the cost model reads them) --------------------
# template -> (params, default, stage)
ROW_META = (
    {
        "BLOCK_N": ["row", 512, 1024, 2048, 4096],
        "num_warps": [1, 2, 4, 8, 16],
        "ROWS": [1, 2, 4],
        "num_stages": [1, 2, 3],
    },
    {"BLOCK_N": "row", "num_warps": 4, "ROWS": 1, "num_stages": 1},
    {"BLOCK_N": 1, "num_warps": 1, "ROWS": 2, "num_stages": 3},
)
META = {
    "matmul": (
        {
            "BLOCK_M": [16, 32, 64, 128],
            "BLOCK_N": [32, 64, 128, 256],
            "BLOCK_K": [16, 32, 64],
            "num_warps": [2, 4, 8],
            "precision": ["ieee", "tf32x3"],
            "num_stages": [2, 3, 4, 5],
            "GROUP_M": [1, 4, 8],
        },
        {
            "BLOCK_M": 64,
            "BLOCK_N": 64,
            "BLOCK_K": 32,
            "num_warps": 4,
            "precision": "ieee",
            "num_stages": 3,
            "GROUP_M": 8,
        },
        {"BLOCK_M": 1, "BLOCK_N": 1, "BLOCK_K": 1, "num_warps": 1, "precision": 2, "num_stages": 2, "GROUP_M": 3},
    ),
    "elementwise": (
        {"BLOCK": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8]},
        {"BLOCK": 1024, "num_warps": 4},
        {"BLOCK": 1, "num_warps": 1},
    ),
    **dict.fromkeys(("softmax", "layernorm", "rmsnorm", "reduce"), ROW_META),
}


@pytest.mark.parametrize("family", [f for f in T.families() if f not in ("attention", "graph")])
def test_triton_parameter_contract(family):
    space, default, stage = META[T.TEMPLATE_OF[family]]
    assert T.param_space(family, "triton") == space
    assert T.default_params(family, "triton") == default
    assert T.param_stages(family, "triton") == stage


def test_attention_has_a_triton_template_with_tiles_to_search():
    space = T.param_space("attention", "triton")
    assert {"BLOCK_M", "BLOCK_N", "num_warps", "num_stages"} <= set(space)


def test_every_parameter_value_renders_valid_python(specs):
    """One change at a time from the defaults, for every problem: the file compiles (nothing is run)."""
    rendered = 0
    for name, family, _ in TRITON_CASES:
        spec = specs[name]
        assert spec["family"] == family, spec.get("reason")
        default = T.default_params(family, "triton")
        for key, values in T.param_space(family, "triton").items():
            for value in values:
                source = T.render(spec, {**default, key: value}, "triton")
                compile(source, f"{name}:{key}={value}", "exec")
                assert "@triton.jit" in source and "class _Reference(nn.Module)" in source
                assert f'"{key}": {json.dumps(value)}' in source  # the parameters are in the docstring
                rendered += 1
    assert rendered > 100


def test_the_harness_cases_cover_every_epilogue_op(specs):
    """Every step _common/epilogue.j2 (the C++ side) supports is judged by the harness (tests/harness/
    test_builtin_triton.py) through "every_op" and "chain"."""
    steps = specs["every_op"]["attrs"]["chain"] + specs["chain"]["attrs"]["chain"]
    seen = {(s["op"], s.get("exponent", s.get("approximate"))) for s in steps}
    unary = {"relu", "leaky_relu", "silu", "sigmoid", "tanh", "exp", "neg", "abs", "sqrt", "rsqrt", "clamp"}
    binary = {"add", "sub", "mul", "div", "rsub", "rdiv"}
    assert {op for op, _ in seen} >= unary | binary | {"gelu", "pow"}
    assert {("gelu", "none"), ("gelu", "tanh")} <= seen
    assert {e for op, e in seen if op == "pow"} == {1, 2, 3, 0.5, -0.5, -1}
    operands = {(s["bcast"], "input" if "input" in s else "param") for s in steps if "bcast" in s}
    assert operands == {("one", "param"), ("full", "input"), ("lastdim", "param")}


def test_row_blocks_wider_than_triton_allows_are_refused(specs):
    spec = {**specs["softmax"], "input_shapes": [[4, 70000]], "output_shape": [4, 70000]}
    with pytest.raises(T.TemplateError, match="65536"):
        T.render(spec, {}, "triton")
    compile(T.render(spec, {"BLOCK_N": 4096}, "triton"), "looped", "exec")  # a chunked row has no limit
    with pytest.raises(T.TemplateError, match="not one of"):
        T.render(spec, {"BLOCK_N": 300}, "triton")


def test_a_tensor_operand_after_a_reduction_is_refused(specs):
    spec = json.loads(json.dumps(specs["sum"]))
    spec["epilogue"] = [{"op": "add", "input": 0, "bcast": "lastdim"}]
    with pytest.raises(T.TemplateError, match="tensor operand"):
        T.render(spec, {}, "triton")
