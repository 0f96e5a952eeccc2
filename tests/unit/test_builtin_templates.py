"""The built-in policy's raw material without the harness: problem recognition
(agentkern.policies.builtin.recognize, in this process) and the C++ templates' parameters and refusals
(agentkern.policies.builtin.templates). The rendered kernels judged by the harness: tests/harness/test_builtin.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from builtin_problems import lazy_specs, write_cpp_problems

from agentkern.policies.builtin import templates as T


@pytest.fixture(scope="module")
def problems(tmp_path_factory) -> dict[str, Path]:
    return write_cpp_problems(tmp_path_factory.mktemp("problems"))


@pytest.fixture(scope="module")
def specs(problems) -> dict[str, dict]:
    return lazy_specs(problems)


# ---- recognition --------------------------------------------------------------------------------------------
SHIPPED = {
    "softmax": ("softmax", {"dim": -1, "scale": 1.0, "input": 0}, []),
    "layernorm": ("layernorm", {"eps": 1e-5, "affine": True, "bias": True, "normalized_shape": [1024], "input": 0}, []),
    "matmul": (
        "matmul",
        {
            "a": {"input": 0, "trans": False},
            "b": {"input": 1, "trans": False},
            "batch": 1,
            "M": 1024,
            "N": 1024,
            "K": 1024,
        },
        [],
    ),
    "relu": ("elementwise", {"input": 0, "chain": [{"op": "relu"}]}, []),
    "sum_rows": ("reduce", {"op": "sum", "dim": -1, "keepdim": False, "input": 0}, []),
    "sum_middle_dim": ("reduce", {"op": "sum", "dim": -2, "keepdim": False, "input": 0, "inner_dims": 1}, []),
    "attention": ("attention", {"causal": False, "scale": 0.125, "default_scale": True, "q": 0, "k": 1, "v": 2}, []),
    "attention_causal": (
        "attention",
        {"causal": True, "scale": 0.125, "default_scale": True, "q": 0, "k": 1, "v": 2},
        [],
    ),
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_analyze_shipped_problems(specs, name):
    family, attrs, epilogue = SHIPPED[name]
    spec = specs[name]
    assert (spec["family"], spec["attrs"], spec["epilogue"]) == (family, attrs, epilogue), spec.get("reason")
    assert spec["dtype"] == "float32" and spec["reason"] is None
    assert "class _Reference(nn.Module)" in spec["model_source"] and "get_inputs" not in spec["model_source"]
    if name == "layernorm":
        assert spec["param_paths"] == {"weight": "norm.weight", "bias": "norm.bias"}
        assert spec["init_args"] == [1024]


def test_analyze_hand_written_problems(specs):
    s = specs["scaled_softmax"]
    assert (s["family"], s["attrs"]["scale"], s["epilogue"]) == ("softmax", 0.125, [])
    s = specs["log_softmax_scaled"]
    assert (s["family"], s["attrs"]["dim"], s["attrs"]["scale"]) == ("log_softmax", -1, 0.5)
    s = specs["rms_hand"]
    assert s["family"] == "rmsnorm" and s["attrs"]["eps"] == 1e-6 and s["attrs"]["affine"] and s["epilogue"] == []
    assert s["param_paths"] == {"weight": "weight"}
    s = specs["rms_module"]
    assert (
        s["family"] == "rmsnorm"
        and s["epilogue"] == [{"op": "silu"}]
        and s["attrs"]["eps"] == pytest.approx(1.1920929e-07)
    )
    s = specs["linear_gelu"]
    assert s["family"] == "linear" and s["attrs"]["bias"] and s["attrs"]["b"] == {"param": "weight", "trans": True}
    assert s["epilogue"] == [{"op": "add", "param": "bias", "bcast": "lastdim"}, {"op": "gelu", "approximate": "none"}]
    assert s["param_paths"] == {"weight": "fc.weight", "bias": "fc.bias"}
    assert "super(_Reference, self).__init__()" in s["model_source"]
    s = specs["amax"]
    assert (s["family"], s["attrs"]["op"], s["attrs"]["keepdim"], s["output_shape"]) == ("reduce", "amax", False, [256])
    s = specs["max_long"]
    assert (s["family"], s["attrs"]["op"], s["attrs"]["keepdim"]) == ("reduce", "max", True)
    s = specs["matmul_t"]
    assert s["family"] == "matmul" and s["attrs"]["a"]["trans"] and not s["attrs"]["b"]["trans"]
    assert [x["op"] for x in s["epilogue"]] == ["sigmoid", "sub"]
    assert specs["bmm_relu"]["family"] == "bmm" and specs["bmm_relu"]["attrs"]["batch"] == 6
    chain = specs["chain"]["attrs"]["chain"]
    assert [x["op"] for x in chain] == ["mul", "tanh", "add", "gelu", "mul", "sub", "sigmoid", "add", "rdiv"]
    assert chain[2] == {"op": "add", "input": 1, "bcast": "full"} and chain[5]["bcast"] == "lastdim"
    s = specs["attn_odd"]
    assert (s["family"], s["attrs"]["causal"], s["attrs"]["scale"]) == ("attention", True, 0.3)
    assert [x["op"] for x in s["epilogue"]] == ["relu", "mul"]
    s = specs["residual_layernorm"]
    assert s["family"] == "layernorm" and (s["attrs"]["input"], s["attrs"]["residual"]) == (0, 1)
    assert s["attrs"]["affine"] and s["attrs"]["bias"] and s["epilogue"] == []
    assert "input0 + input1" in T.summary(s)
    s = specs["matmul_bf16"]
    assert (s["family"], s["dtype"]) == ("matmul", "bfloat16")
    s = specs["control_flow"]
    assert (s["family"], s["frontend"], s["epilogue"]) == ("layernorm", "dispatch", [{"op": "relu"}])
    # a softmax over the last dim of a GEMM's output is the GEMM's row operation, after its epilogue
    s = specs["gemm_gelu_softmax"]
    assert (s["family"], s["attrs"]["row_op"], [x["op"] for x in s["epilogue"]]) == (
        "linear",
        "softmax",
        ["add", "gelu"],
    )
    assert T.summary(s) == "softmax(gelu((input0 @ weight^T + bias)), dim=-1)"
    s = specs["matmul_t_log_softmax"]
    assert (s["family"], s["attrs"]["row_op"], s["attrs"]["a"]["trans"]) == ("matmul", "log_softmax", True)
    assert (specs["bmm_softmax"]["family"], specs["bmm_softmax"]["attrs"]["row_op"]) == ("bmm", "softmax")
    s = specs["bmm_one_batch"]  # one batch of 3-D operands is bmm's, not a 2-D matmul's
    assert (s["family"], s["attrs"]["batch"], s["attrs"]["a"]["trans"]) == ("bmm", 1, True)


def test_unsupported_problems_give_a_reason(specs):
    spec = specs["sort"]
    assert spec["family"] is None and "aten.sort" in spec["reason"] and "\n" not in spec["reason"]
    with pytest.raises(T.TemplateError, match="not recognised"):
        T.render(spec, {})


@pytest.mark.parametrize("name", ["softmax_dim0", "two_branches", "attn_mask", "softmax_of_gemm_softmax"])
def test_graphs_no_one_template_covers_are_the_graph_family(specs, name):
    spec = specs[name]
    assert spec["family"] == "graph" and spec["frontend"] == "graph" and spec["reason"] is None
    assert any(n["op"].startswith("aten.") for n in spec["attrs"]["graph"]["nodes"])


# ---- templates ------------------------------------------------------------------------------------------------
def test_template_metadata():
    assert set(T.families()) == {
        "softmax",
        "log_softmax",
        "layernorm",
        "rmsnorm",
        "reduce",
        "elementwise",
        "matmul",
        "linear",
        "bmm",
        "attention",
        "graph",
    }
    for family in T.families():
        space, default = T.param_space(family), T.default_params(family)
        assert space and all(default[k] in v for k, v in space.items())
        stages = T.param_stages(family)
        assert set(stages.values()) <= {1, 2, 3} and set(T.param_space(family, stage_max=1)) < set(space)
    assert set(T.param_space("matmul", stage_max=1)) == {"micro", "kc", "mc", "nc", "b_block", "amx"}


def test_avx512_micro_kernels_are_offered_only_to_hosts_that_have_it():
    avx2, avx512 = T.host_features(256), T.host_features(512)
    assert avx2 == frozenset() and avx512 == {"avx512f"}
    wide = {"12x32", "14x32", "6x64", "8x32"}
    assert wide <= set(T.param_space("matmul")["micro"])  # no filter: anything can be rendered
    assert not wide & set(T.param_space("matmul", features=avx2)["micro"])
    assert wide <= set(T.param_space("matmul", features=avx512)["micro"])
    assert T.default_params("matmul", features=avx2)["micro"] == "6x16"
    assert T.default_params("matmul", features=avx512)["micro"] in wide
    assert T.default_params("matmul", features=avx512)["micro"] != T.default_params("matmul")["micro"]
    # AMX tiles: offered, and the default, only where the host has AMX-BF16 (and AVX-512, which every AMX CPU has).
    amx = T.host_features(512, amx_bf16=True)
    assert amx == {"avx512f", "amx_bf16"} and T.host_features(256, amx_bf16=True) == frozenset()
    assert T.param_space("matmul", features=avx512)["amx"] == [0]
    assert T.param_space("matmul", features=amx)["amx"] == [0, 1]
    assert (
        T.default_params("matmul", features=avx512)["amx"] == 0 and T.default_params("matmul", features=amx)["amx"] == 1
    )
    for family in ("softmax", "log_softmax", "elementwise", "reduce", "rmsnorm", "layernorm", "attention"):
        assert T.param_space(family, features=avx2)["simd"] == ["avx2"]
        assert T.param_space(family, features=avx512)["simd"] == ["avx2", "avx512"]
        assert T.default_params(family, features=avx2)["simd"] == "avx2"
        assert T.default_params(family, features=avx512)["simd"] == "avx512"


def test_render_rejects_bad_input(specs):
    with pytest.raises(T.TemplateError, match="float32 only"):
        T.render(specs["half"], {})
    assert "acc = tl.dot(a, b, acc)  # float16 operands" in T.render(specs["matmul_fp16"], {}, backend="triton")
    with pytest.raises(T.TemplateError, match="no tensor operands"):
        T.render(specs["linear_half"], {})
    with pytest.raises(T.TemplateError, match="residual"):
        T.render(specs["rms_residual"], {})
    with pytest.raises(T.TemplateError, match="residual"):
        T.render(specs["residual_layernorm"], {}, backend="triton")
    with pytest.raises(T.TemplateError, match="unknown parameter"):
        T.render(specs["softmax"], {"tile": 3})
    with pytest.raises(T.TemplateError, match="not one of"):
        T.render(specs["softmax"], {"block_vecs": 3})
    assert T.cfloat(0.1) == "0x1.99999a0000000p-4f" and T.cfloat(float("-inf")) == "(-__builtin_inff())"


SHIPPED_PROBLEMS = sorted(
    p.stem for p in (Path(__file__).resolve().parents[2] / "kernels_dataset" / "problems").glob("*.py")
)


@pytest.mark.parametrize("name", SHIPPED_PROBLEMS)
def test_every_shipped_problem_renders_with_its_templates_defaults(specs, name):
    """Rendering only (no compiler here): a template reading a spec key that only some specs have fails here."""
    spec = specs[name]
    assert spec["family"], spec["reason"]
    source = T.render(spec, {})
    compile(source, f"{name} rendered", "exec")


@pytest.mark.parametrize("name", SHIPPED_PROBLEMS)
def test_every_shipped_problem_names_the_family_it_is_recognised_as(specs, name):
    """A problem's docstring says which built-in template family takes it; users read that line, so it must be
    the recogniser's answer (attention's said "none" for a while after the attention template landed)."""
    text = (Path(__file__).resolve().parents[2] / "kernels_dataset" / "problems" / f"{name}.py").read_text()
    said = re.search(r"Built-in template family: (\w+)", text)
    assert said, f"{name}.py's docstring does not name its built-in template family"
    assert said[1] == specs[name]["family"], specs[name].get("reason")
