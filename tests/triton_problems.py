"""Problems for the tests of the built-in policy's Triton templates, as KernelBench files (TRITON_SOURCES), and
TRITON_CASES, the parameter sets the harness judges them with. Small and ragged (300 columns, 70 x 90 x 50
GEMMs) so that every mask is exercised and the interpreter stays quick. Their OpSpecs:
builtin_problems.lazy_specs."""

from __future__ import annotations

from pathlib import Path

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

TRITON_SOURCES = {
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
    # ragged attention: 70 queries, 50 keys, head dim 40 (masked to 64 lanes); causal with the default scale,
    # and a fp16 GEMM on the tensor-core path
    "attention_causal": problem(
        "F.scaled_dot_product_attention(q, k, v, is_causal=True)",
        "[torch.randn(2, 3, 70, 40), torch.randn(2, 3, 50, 40), torch.randn(2, 3, 50, 40)]",
        sig="q, k, v",
    ),
    "attention_scaled": problem(
        "F.scaled_dot_product_attention(q, k, v, scale=0.3)",
        "[torch.randn(1, 2, 33, 64), torch.randn(1, 2, 33, 64), torch.randn(1, 2, 33, 64)]",
        sig="q, k, v",
    ),
    "matmul_fp16": problem(
        "torch.matmul(a, b)",
        "[torch.randn(70, 50, dtype=torch.float16), torch.randn(50, 90, dtype=torch.float16)]",
        sig="a, b",
    ),
}

# (problem, family, non-default parameter sets): each family with at least one; looped BLOCK_N shorter
# than the row; GEMM blocks that divide none of M, N, K.
TRITON_CASES = [
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
    ("attention_causal", "attention", [{"BLOCK_M": 16, "BLOCK_N": 32}]),
    ("attention_scaled", "attention", [{"BLOCK_M": 32, "BLOCK_N": 16, "precision": "tf32x3"}]),
    ("matmul_fp16", "matmul", [{"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32}]),
]


def write_triton_problems(root: Path) -> dict[str, Path]:
    """TRITON_SOURCES written under `root`: name -> path."""
    out = {}
    for name, text in TRITON_SOURCES.items():
        out[name] = root / f"{name}.py"
        out[name].write_text(text)
    return out
