"""The built-in policy's C++ templates, each rendered file judged by the real harness, and recognition in the
sandbox. (Recognition and the templates' parameters without the harness: tests/unit/test_builtin_templates.py.)"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from builtin_problems import HEADER, lazy_specs, write_cpp_problems

from agentkern.errors import UserError
from agentkern.harness.evaluate import evaluate
from agentkern.harness.sandbox import WarmPool
from agentkern.policies.builtin import templates as T
from agentkern.types import EvalOptions


@pytest.fixture(scope="module")
def problems(tmp_path_factory) -> dict[str, Path]:
    return write_cpp_problems(tmp_path_factory.mktemp("problems"))


@pytest.fixture(scope="module")
def specs(problems) -> dict[str, dict]:
    return lazy_specs(problems)


# (problem, non-default parameters): every family, its defaults and one other set, judged by the harness.
CASES = [
    ("softmax", {"algorithm": "three_pass", "block_vecs": 2, "schedule": "dynamic", "prefetch": 1, "stream": "always"}),
    ("scaled_softmax", {"block_vecs": 8, "prefetch": 1, "stream": "always"}),
    ("log_softmax_scaled", {"stream": "always"}),  # rows of 333: streamed where a row starts on a vector, else not
    ("log_softmax", {"algorithm": "three_pass", "block_vecs": 8}),
    ("softmax_avx512", {"simd": "avx512", "block_vecs": 2, "prefetch": 1}),
    ("scaled_softmax_avx512", {"simd": "avx512", "algorithm": "three_pass", "block_vecs": 4}),
    ("log_softmax_avx512", {"simd": "avx512", "block_vecs": 8}),
    (
        "layernorm_relu",
        {"algorithm": "one_pass", "accumulators": 4, "unroll": 1, "schedule": "dynamic", "stream": "always"},
    ),
    ("rms_hand", {"algorithm": "rows", "accumulators": 4, "block": 1024, "unroll": 4, "stream": "always"}),
    ("rms_module", {"block": 1024, "stream": "always"}),  # one row of 20000: split among the threads
    ("amax", {"accumulators": 4, "algorithm": "rows", "schedule": "dynamic"}),
    ("max_long", {"block": 1024}),
    ("sum_rows", {"block": 4096, "accumulators": 4}),
    ("sum_mid_keepdim_avx512", {"simd": "avx512"}),
    ("mean_dim0", {"algorithm": "rows", "schedule": "dynamic"}),
    ("amin_mid_nan_avx512", {"simd": "avx512"}),
    ("chain", {"unroll": 1, "schedule": "dynamic", "stream": "always"}),
    ("bias_relu_odd", {"stream": "always", "unroll": 2}),  # a bias row of 333: rows streamed where aligned
    ("relu", {"stream": "always", "chunk": 4096, "unroll": 2}),
    ("chain_avx512", {"simd": "avx512", "unroll": 2, "schedule": "dynamic"}),
    ("gelu_avx512", {"simd": "avx512", "stream": "always", "chunk": 4096}),
    (
        "linear_gelu",
        {
            "micro": "4x24",
            "pack_a": False,
            "kc": 128,
            "mc": 48,
            "nc": 512,
            "b_block": "l2",  # four K slices of 128, one at a time where half the L2 is under 1 MiB
            "schedule": "static",
            "unroll": 1,
            "prefetch": 0,
        },
    ),
    ("matmul_t", {"micro": "8x8", "kc": 192, "pack_a": False}),
    # b_block "whole": a column block's three K slices of B packed at once (read transposed), each job its K loop
    ("matmul_t_whole_b", {"micro": "6x16", "kc": 128, "b_block": "whole"}),
    ("gemm_gelu_softmax", {"micro": "12x32", "amx": 1}),
    ("matmul_t_log_softmax", {"micro": "4x24", "kc": 128}),
    ("bmm_softmax", {"micro": "8x32", "amx": 1}),
    ("bmm_relu", {"micro": "4x16", "kc": 384, "mc": 144, "nc": 1024}),
    ("bmm_one_batch", {"micro": "6x16"}),
    ("matvec", {"micro": "6x16"}),
    ("matvec_t_relu", {"micro": "8x8"}),
    ("matvec_long_k", {"micro": "4x16"}),
    ("linear_one_row", {"micro": "4x24"}),
    ("bmv", {"micro": "6x16"}),
    ("vecmat_wide", {"micro": "6x16"}),
    ("residual_layernorm", {"algorithm": "one_pass", "unroll": 4, "stream": "always"}),
    ("matmul_fp16", {"micro": "4x24", "kc": 128, "pack_a": False}),
    ("matmul_bias_gelu", {"micro": "14x32", "kc": 256, "mc": 96}),
    ("matmul_bf16", {"micro": "8x8", "kc": 384, "schedule": "static"}),
    ("amax_avx512", {"simd": "avx512", "accumulators": 4, "algorithm": "rows"}),
    ("max_long_avx512", {"simd": "avx512", "block": 1024}),
    ("sum_rows_avx512", {"simd": "avx512", "block": 4096}),
    ("layernorm_relu_avx512", {"simd": "avx512", "algorithm": "one_pass", "unroll": 1}),
    ("residual_layernorm_avx512", {"simd": "avx512", "algorithm": "two_pass"}),
    ("rms_hand_avx512", {"simd": "avx512", "algorithm": "split_rows", "unroll": 2}),
    ("attention_causal", {"mb": 4, "schedule": "dynamic"}),
    ("attn_odd", {"mb": 8}),
    ("attn_odd_avx512", {"simd": "avx512", "mb": 6, "nv": 4}),
    ("attention_avx512", {"simd": "avx512", "mb": 8, "nv": 1, "schedule": "dynamic"}),
]
# The problems whose default parameters are judged too, beside their variant: one per template and per path
# within it (rows or columns, fp16, batched, one vector), each evaluation a build and three process starts,
# ~10-40 s on 2 cores. The other problems' defaults are
# rendered and byte-compiled here, not judged; `agentkern bench kernels_dataset` judges the defaults it renders.
DEFAULT_JUDGED = {
    "softmax",
    "layernorm_relu",
    "rms_hand",
    "amax",
    "mean_dim0",
    "chain",
    "relu",
    "linear_gelu",
    "matmul_t",
    "bmm_relu",
    "matvec",
    "matmul_fp16",
    "residual_layernorm",
    "attention_causal",
}
FAST = EvalOptions(time_budget_s=0.05, min_timed_calls=3, max_timed_calls=5, run_timeout_s=60, memory_limit_gb=4)


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    pool = WarmPool(tmp_path_factory.mktemp("pool"))
    yield pool
    pool.close()


@pytest.mark.slow
@pytest.mark.parametrize("name, params", CASES, ids=[c[0] for c in CASES])
def test_rendered_kernels_pass_the_harness(problems, specs, pool, tmp_path, name, params):
    from agentkern.targets import get_target

    wide = "x32" in params.get("micro", "") or "avx512" in params.values()
    if T.host_features(get_target("cpu").simd_width_bits) != T.host_features(512) and wide:
        pytest.skip("an AVX-512 kernel on a host without AVX-512")
    judge_default = name in DEFAULT_JUDGED
    name = name.removesuffix("_avx512")
    spec = specs[name]
    assert spec["family"], spec["reason"]
    for label, chosen in (("default", {}), ("variant", params)):
        source = T.render(spec, chosen)
        compile(source, "rendered", "exec")
        assert "_Reference" in source and ("compile_cpp" in source or "compile_with_ops" in source)
        if label == "default" and not judge_default:
            continue  # rendered, not judged here (DEFAULT_JUDGED)
        path = tmp_path / f"{name}_{label}.py"
        path.write_text(source)
        result = evaluate(problems[name], path, "cpu", FAST, pool=pool)
        assert result.status == "ok", (label, result.error, result.details.get("log_tail"))
        assert result.details["backend"] == "cpp" and result.correct


@pytest.mark.slow
def test_analyze_problem_in_the_sandbox(problems, tmp_path):
    from agentkern.policies.builtin.analysis import analyze_problem

    spec = analyze_problem(problems["linear_gelu"])
    assert spec["family"] == "linear" and spec["param_paths"]["bias"] == "fc.bias"
    broken = tmp_path / "broken.py"
    broken.write_text(
        HEADER
        + textwrap.dedent("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                raise RuntimeError("no model here")

        def get_inputs():
            return []

        def get_init_inputs():
            return []
        """)
    )
    with pytest.raises(UserError, match="no model here"):
        analyze_problem(broken)
    with pytest.raises(UserError):
        analyze_problem(tmp_path / "missing.py")
