"""The built-in policy's Triton templates: every family rendered with its defaults and other parameter sets,
each file judged by the real harness (on a machine without a GPU: the Triton interpreter, timing
unavailable). Problem sizes are small and ragged (300 columns, 70 x 90 x 50 GEMMs) so that every mask is
exercised and the interpreter stays quick."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentkern.harness import evaluate
from agentkern.policies.builtin import templates as T
from agentkern.policies.builtin.recognize import analyze
from agentkern.types import EvalOptions

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


def problem(forward: str, inputs: str, sig: str = "x", init: str = "[]", ctor_args: str = "", ctor: str = "") -> str:
    """A KernelBench problem file: `forward(self, sig)` returns `forward`; `ctor` (lines) builds the Model."""
    body = "".join(f"        {line}\n" for line in ctor.splitlines())
    init_fn = f"    def __init__(self{ctor_args}):\n        super().__init__()\n{body}\n" if ctor else ""
    return (
        f"{HEADER}class Model(nn.Module):\n{init_fn}"
        f"    def forward(self, {sig}):\n        return {forward}\n\n\n"
        f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return {init}\n"
    )


LN_INIT = """self.ln = nn.LayerNorm(n)
with torch.no_grad():
    self.ln.weight.uniform_(0.5, 1.5)
    self.ln.bias.uniform_(-0.5, 0.5)"""
RMS_INIT = """self.norm = nn.RMSNorm(n)
with torch.no_grad():
    self.norm.weight.uniform_(0.5, 1.5)"""
EVERY_OP = (
    "torch.clamp(torch.sigmoid(torch.clamp(torch.relu(torch.tanh(((((2.0 - torch.rsqrt(F.gelu(torch.exp("
    "-torch.sqrt(torch.abs(F.silu(torch.clamp(F.leaky_relu(x, 0.1), min=-0.05, max=2.0) * self.s)) + 1.0)))"
    " * 3.0 + 1.0) ** 3) ** 2 / 3.0) ** -1) ** 0.5 + 1.0) ** -0.5) - 0.6), max=0.2)) ** 1, min=0.1)"
)

SOURCES = {
    # softmax, then a last-dim parameter: a broadcast vector in a row template's epilogue
    "softmax": problem(
        "torch.softmax(x, dim=-1) * self.g",
        "[torch.randn(64, 300) * 3]",
        init="[300]",
        ctor_args=", n",
        ctor="self.g = nn.Parameter(torch.rand(n) + 0.5)",
    ),
    "log_softmax": problem("torch.log_softmax(x / -1.7, dim=-1)", "[torch.randn(64, 1100) * 3]"),
    # a residual input (a full operand) after the norm; the offset tests the variance's robustness
    "layernorm": problem(
        "torch.relu(self.ln(x) + r) * 2",
        "[torch.randn(2, 32, 700) + 3, torch.randn(2, 32, 700)]",
        sig="x, r",
        init="[700]",
        ctor_args=", n",
        ctor=LN_INIT,
    ),
    "rms_module": problem(
        "F.silu(self.norm(x))", "[torch.randn(64, 700)]", init="[700]", ctor_args=", n", ctor=RMS_INIT
    ),
    "rms_hand": problem(
        "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight",
        "[torch.randn(64, 300)]",
        init="[300]",
        ctor_args=", n",
        ctor="self.weight = nn.Parameter(torch.rand(n) + 0.5)",
    ),
    "sum": problem("x.sum(-1)", "[torch.randn(4, 16, 700)]"),
    "mean": problem("x.mean(dim=-1, keepdim=True) * 3", "[torch.randn(64, 300)]"),
    "max": problem("torch.max(x, dim=-1, keepdim=True)[0]", "[torch.randn(64, 700)]"),
    # an input (full) and a parameter (last-dim vector) operand in one chain
    "chain": problem(
        '1.0 / (torch.sigmoid(F.gelu(torch.tanh(x * 0.5) + y, approximate="tanh") * 2.0 - self.b) + 1.0)',
        "[torch.randn(64, 300), torch.randn(64, 300)]",
        sig="x, y",
        init="[300]",
        ctor_args=", n",
        ctor="self.b = nn.Parameter(torch.randn(n))",
    ),
    # every other epilogue op, and a one-element parameter
    "every_op": problem(EVERY_OP, "[torch.randn(64, 300)]", ctor="self.s = nn.Parameter(torch.tensor([0.7]))"),
    "matmul": problem("torch.matmul(a, b)", "[torch.randn(70, 50), torch.randn(50, 90)]", sig="a, b"),
    "linear_gelu": problem(
        "F.gelu(self.fc(x))",
        "[torch.randn(2, 35, 50)]",
        init="[50, 90]",
        ctor_args=", fin, fout",
        ctor="self.fc = nn.Linear(fin, fout)",
    ),
    "bmm": problem("torch.relu(torch.bmm(a, b))", "[torch.randn(3, 40, 50), torch.randn(3, 50, 30)]", sig="a, b"),
    "matmul_t": problem(
        "torch.sigmoid(torch.matmul(a.T, b)) - 0.5", "[torch.randn(50, 70), torch.randn(50, 90)]", sig="a, b"
    ),
}

# (problem, family, non-default parameter sets): each family with at least one; looped BLOCK_N shorter
# than the row; GEMM blocks that divide none of M, N, K.
CASES = [
    ("softmax", "softmax", [{"ROWS": 4, "num_warps": 1}]),
    ("log_softmax", "log_softmax", [{"BLOCK_N": 512, "ROWS": 2, "num_stages": 2}]),
    ("layernorm", "layernorm", [{"BLOCK_N": 512, "ROWS": 2}]),
    ("rms_module", "rmsnorm", [{"BLOCK_N": 512, "ROWS": 2, "num_warps": 8}]),
    ("rms_hand", "rmsnorm", []),
    ("sum", "reduce", [{"BLOCK_N": 512, "ROWS": 4}]),
    ("mean", "reduce", []),
    ("max", "reduce", [{"BLOCK_N": 512, "ROWS": 2}]),
    ("chain", "elementwise", [{"BLOCK": 256, "num_warps": 1}]),
    ("every_op", "elementwise", []),
    ("matmul", "matmul", [{"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 1, "precision": "tf32x3"}]),
    ("linear_gelu", "linear", [{"BLOCK_M": 32, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 4, "num_stages": 2}]),
    ("bmm", "bmm", [{"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16}]),
    ("matmul_t", "matmul", [{"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 4}]),
]
OPTS = EvalOptions(
    trials=2, time_budget_s=0.05, min_timed_calls=3, max_timed_calls=5, run_timeout_s=60, memory_limit_gb=4
)


@pytest.fixture(scope="module")
def problems(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("triton-problems")
    out = {}
    for name, text in SOURCES.items():
        out[name] = root / f"{name}.py"
        out[name].write_text(text)
    return out


@pytest.fixture(scope="module")
def specs(problems) -> dict[str, dict]:
    class Lazy(dict):
        def __missing__(self, name):
            self[name] = analyze(str(problems[name]))
            return self[name]

    return Lazy()


def judge(problem_path: Path, source: str, path: Path, pool=None):
    """The harness's verdict, in a fresh worker (or a WarmPool's spare)."""
    compile(source, str(path), "exec")
    path.write_text(source)
    return evaluate(problem_path, path, "h100", OPTS, pool=pool)


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


@pytest.mark.parametrize("family", [f for f in T.families() if f != "attention"])
def test_triton_parameter_contract(family):
    space, default, stage = META[T.TEMPLATE_OF[family]]
    assert T.param_space(family, "triton") == space
    assert T.default_params(family, "triton") == default
    assert T.param_stages(family, "triton") == stage


def test_attention_has_no_triton_template_and_says_so():
    with pytest.raises(T.TemplateError, match="no triton template for attention"):
        T.param_space("attention", "triton")


def test_every_parameter_value_renders_valid_python(specs):
    """One change at a time from the defaults, for every problem: the file compiles (nothing is run)."""
    rendered = 0
    for name, family, _ in CASES:
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
    """Every step _common/epilogue.j2 (the C++ side) supports is judged below through "every_op" and "chain"."""
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


# ---- the harness's verdict --------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name, family, variants", CASES, ids=[c[0] for c in CASES])
def test_rendered_triton_kernels_pass_the_harness(problems, specs, tmp_path, name, family, variants):
    spec = specs[name]
    assert spec["family"] == family, spec.get("reason")
    for i, params in enumerate([{}] + variants):
        result = judge(problems[name], T.render(spec, params, "triton"), tmp_path / f"{name}_{i}.py")
        assert result.status == "ok", (params, result.error, result.details.get("log_tail"))
        assert result.correct and result.details["backend"] == "triton"
        if result.details["device"] == "cpu":  # no GPU: correctness through the interpreter, no timing
            assert result.speedup is None


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, params, pattern, replacement",
    [
        # the linear's fused GELU dropped: only the bias is left
        ("linear_gelu", {}, r"\n\s*y = 0\.5 \* y \* \(1\.0 \+ tl\.math\.erf\(.*\n", "\n"),
        # the online softmax no longer rescales the running sum when a later chunk raises the max
        ("log_softmax", {"BLOCK_N": 512}, r"s \* tl\.exp\(m - m_ref\)", "s"),
    ],
    ids=["no_gelu", "no_rescale"],
)
def test_a_wrong_variant_is_caught(problems, specs, tmp_path, name, params, pattern, replacement):
    """The harness cases above can fail: the same files, subtly broken, are judged incorrect."""
    source = T.render(specs[name], params, "triton")
    broken, count = re.subn(pattern, replacement, source)
    assert count == 1
    result = judge(problems[name], broken, tmp_path / f"{name}_broken.py")
    assert result.status == "incorrect" and not result.correct, (result.status, result.error)


@pytest.mark.slow
def test_warm_workers_run_triton_in_the_interpreter(problems, specs, tmp_path):
    """A spare worker imports torch, and with it triton, before its request arrives: it must have been
    started with TRITON_INTERPRET already set, or tl.sum is not the interpreter's and every kernel fails
    with "Cannot call @triton.jit'd outside of the scope of a kernel"."""
    from agentkern.harness import WarmPool

    pool = WarmPool(tmp_path / "spares")
    try:
        source = T.render(specs["softmax"], {}, "triton")
        first = judge(problems["softmax"], source, tmp_path / "a.py", pool)
        second = judge(problems["softmax"], source, tmp_path / "b.py", pool)
    finally:
        pool.close()
    assert (first.status, second.status) == ("ok", "ok"), (first.error, second.error)
    assert second.details["warm_worker"] is True


@pytest.mark.slow
def test_optimize_for_an_absent_gpu_end_to_end(problems, tmp_path, monkeypatch):
    """`agentkern optimize --target h100` without the GPU: built-in Triton candidates, correct in the
    interpreter, ranked by predicted speedup, the best written out and marked predicted."""
    from agentkern import targets as targets
    from agentkern.loop import run as optimize
    from agentkern.loop.deps import OptimizeOptions

    monkeypatch.setattr(targets, "is_present", lambda target: False)  # even on a machine with an H100
    opts = OptimizeOptions(
        problem=str(problems["rms_hand"]), target="h100", max_iters=1, beam=2, out=str(tmp_path / "out")
    )
    result = optimize.run(opts)
    assert result["backend"] == "triton" and result["correct_candidates"] == 2
    best = result["best"]
    assert best["predicted"] is True and best["speedup"] > 1  # six eager kernels against one fused pass
    assert "triton.jit" in Path(best["path"]).read_text()
