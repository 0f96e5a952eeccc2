"""What each built-in template can render (dtypes, optional spec attributes) is read from the JSON beside it."""

import json
import shutil

import pytest

from agentkern.config import data_root
from agentkern.policies.builtin import templates as T


def _spec(family: str, dtype: str = "float32", **attrs) -> dict:
    return {"family": family, "dtype": dtype, "attrs": attrs}


@pytest.mark.parametrize(
    "spec, backend, message",
    [
        (
            _spec("matmul", "bfloat16"),
            "triton",
            "the triton matmul template supports float32 and float16 only, the problem uses bfloat16 "
            "(bf16: only the C++ GEMM)",
        ),
        (
            _spec("softmax", "bfloat16"),
            "cpp",
            "the cpp softmax template supports float32 only, the problem uses bfloat16 (fp16/bf16: only the C++ GEMM)",
        ),
        (
            _spec("softmax", "float64"),
            "cpp",
            "the cpp softmax template supports float32 only, the problem uses float64",
        ),
        (
            _spec("layernorm", residual=1),
            "triton",
            "no triton layernorm template reads a residual sum (only the C++ layernorm does)",
        ),
        (
            _spec("linear", row_op="softmax"),
            "triton",
            "no triton linear template reads a softmax over the output's rows (only the C++ GEMM does)",
        ),
        (
            _spec("reduce", op="sum", dim=-2, inner_dims=1),
            "triton",
            "no triton reduce template reads a reduction over a dim other than the last (only the C++ reduce does)",
        ),
        (
            _spec("rmsnorm", residual=1),
            "cpp",
            "no cpp rmsnorm template reads a residual sum (only the C++ layernorm does)",
        ),
    ],
)
def test_a_spec_a_template_cannot_render_is_refused_naming_the_one_that_can(spec, backend, message):
    with pytest.raises(T.TemplateError) as caught:
        T.render(spec, {}, backend)
    assert str(caught.value) == message


def test_the_json_decides_dtypes_and_attributes(tmp_path, monkeypatch):
    shutil.copytree(data_root() / "kernels_dataset", tmp_path / "kernels_dataset")
    monkeypatch.setenv("AGENTKERN_DATA", str(tmp_path))
    T._check_capabilities(_spec("linear", "bfloat16"), "linear", "cpp")  # the shipped C++ GEMM takes bf16
    # The shipped Triton softmax is float32 only (above); this copy says it takes fp16 and a residual too.
    path = tmp_path / "kernels_dataset" / "templates" / "softmax" / "triton.json"
    meta = json.loads(path.read_text())
    path.write_text(json.dumps({**meta, "dtypes": ["float32", "float16"], "attrs": ["residual"]}))
    T._check_capabilities(_spec("softmax", "float16", residual=1), "softmax", "triton")
    with pytest.raises(T.TemplateError, match=r"supports float32 and float16 only, the problem uses bfloat16"):
        T._check_capabilities(_spec("log_softmax", "bfloat16"), "log_softmax", "triton")
