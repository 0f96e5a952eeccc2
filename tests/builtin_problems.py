"""Problems for the tests of the built-in policy's C++ templates, as KernelBench files (CPP_SOURCES, and the
shipped problems), and their OpSpecs. Small shapes: the harness runs each many times. Used by tests/unit
(recognition, rendering) and tests/harness (the rendered kernels judged); the Triton ones: triton_problems.py."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from agentkern.config import dataset_dir
from agentkern.policies.builtin.recognize import analyze

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"

# name -> (body of the problem file after the imports). Small shapes: the harness runs each many times.
CPP_SOURCES = {
    "scaled_softmax": """
        class Model(nn.Module):
            def __init__(self, scale):
                super().__init__()
                self.scale = scale

            def forward(self, x):
                return torch.softmax(x * self.scale, dim=-1)

        def get_inputs():
            return [torch.randn(256, 512) * 4]

        def get_init_inputs():
            return [0.125]
        """,
    "log_softmax_scaled": """
        class Model(nn.Module):
            def forward(self, x):
                return torch.log_softmax(x / 2.0, dim=1)

        def get_inputs():
            return [torch.randn(200, 333)]

        def get_init_inputs():
            return []
        """,
    "rms_hand": """
        class Model(nn.Module):
            def __init__(self, dim, eps=1e-6):
                super().__init__()
                self.eps = eps
                self.weight = nn.Parameter(torch.rand(dim) + 0.5)

            def forward(self, x):
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

        def get_inputs():
            return [torch.randn(256, 512)]

        def get_init_inputs():
            return [512]
        """,
    "rms_module": """
        class Model(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.norm = nn.RMSNorm(dim)
                with torch.no_grad():
                    self.norm.weight.uniform_(0.5, 1.5)

            def forward(self, x):
                return F.silu(self.norm(x))

        def get_inputs():
            return [torch.randn(1, 20000)]

        def get_init_inputs():
            return [20000]
        """,
    "layernorm_relu": """
        class Model(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.ln = nn.LayerNorm(dim)
                with torch.no_grad():
                    self.ln.weight.uniform_(0.5, 1.5)
                    self.ln.bias.uniform_(-0.5, 0.5)

            def forward(self, x):
                return torch.relu(self.ln(x)) * 2

        def get_inputs():
            return [torch.randn(4, 64, 300) + 3]

        def get_init_inputs():
            return [300]
        """,
    "linear_gelu": """
        class Model(nn.Module):
            def __init__(self, fin, fout):
                super(Model, self).__init__()
                self.fc = nn.Linear(fin, fout)

            def forward(self, x):
                return F.gelu(self.fc(x))

        def get_inputs():
            return [torch.randn(256, 512)]

        def get_init_inputs():  # fewer columns than rows: B packed once for all threads (not few_rows)
            return [512, 200]
        """,
    # A GEMM's row operation (softmax / log_softmax over the last dim of its output, after its epilogue). The
    # logits stay small: log_softmax passes a logit's own error through to an output near 0, and any GEMM summing
    # in another order than MKL's differs by 1e-4 on logits of 100 (the x4 trial of a 0.5 scale did).
    "matmul_t_log_softmax": """
        class Model(nn.Module):
            def forward(self, a, b):
                return torch.log_softmax(torch.matmul(a.T, b) * 0.05, dim=-1)

        def get_inputs():
            return [torch.randn(300, 257), torch.randn(300, 199)]

        def get_init_inputs():
            return []
        """,
    "bmm_softmax": """
        class Model(nn.Module):
            def forward(self, a, b):
                return torch.softmax(torch.bmm(a, b), dim=2)

        def get_inputs():
            return [torch.randn(4, 260, 70), torch.randn(4, 70, 301)]

        def get_init_inputs():
            return []
        """,
    "softmax_of_gemm_softmax": """
        class Model(nn.Module):
            def forward(self, a, b):
                return torch.softmax(torch.softmax(a @ b, dim=-1), dim=-1)

        def get_inputs():
            return [torch.randn(40, 30), torch.randn(30, 20)]

        def get_init_inputs():
            return []
        """,
    "matmul_t": """
        class Model(nn.Module):
            def forward(self, a, b):
                return torch.sigmoid(torch.matmul(a.T, b)) - 0.5

        def get_inputs():
            return [torch.randn(300, 257), torch.randn(300, 199)]

        def get_init_inputs():
            return []
        """,
    # Matrix-vector products (M or N is 1): the GEMM template's bandwidth-bound path, each of its two forms.
    "matvec_t_relu": """
        class Model(nn.Module):
            def forward(self, a, x):
                return torch.relu(torch.matmul(a.T, x))

        def get_inputs():
            return [torch.randn(301, 203), torch.randn(301, 1)]

        def get_init_inputs():
            return []
        """,
    "matvec_long_k": """
        class Model(nn.Module):
            def forward(self, a, x):
                return torch.matmul(a, x)

        def get_inputs():
            return [torch.randn(6, 5003) / 70, torch.randn(5003, 1)]

        def get_init_inputs():
            return []
        """,
    "linear_one_row": """
        class Model(nn.Module):
            def __init__(self, fin, fout):
                super().__init__()
                self.fc = nn.Linear(fin, fout)

            def forward(self, x):
                return torch.tanh(self.fc(x))

        def get_inputs():
            return [torch.randn(1, 517)]

        def get_init_inputs():
            return [517, 131]
        """,
    # A row vector times a matrix wider than two chunks of the axpy form's 4096 columns on any thread count up
    # to two: each thread's range in chunks, the last chunk's masked tail, K not a multiple of 4.
    "vecmat_wide": """
        class Model(nn.Module):
            def forward(self, x, w):
                return torch.matmul(x, w) + 1.0

        def get_inputs():
            return [torch.randn(1, 37), torch.randn(37, 9001)]

        def get_init_inputs():
            return []
        """,
    "bmv": """
        class Model(nn.Module):
            def forward(self, a, b):
                return torch.bmm(a, b) * 0.5

        def get_inputs():
            return [torch.randn(5, 1, 130), torch.randn(5, 130, 4099)]

        def get_init_inputs():
            return []
        """,
    # 3-D operands with one batch: still bmm (3-D in, 3-D out), A read transposed
    "bmm_one_batch": """
        class Model(nn.Module):
            def forward(self, a, b):
                return torch.bmm(a.transpose(1, 2), b)

        def get_inputs():
            return [torch.randn(1, 70, 100), torch.randn(1, 70, 130)]

        def get_init_inputs():
            return []
        """,
    "bmm_relu": """
        class Model(nn.Module):
            def forward(self, a, b):
                return torch.relu(torch.bmm(a, b))

        def get_inputs():
            return [torch.randn(6, 100, 70), torch.randn(6, 70, 130)]

        def get_init_inputs():
            return []
        """,
    "amax": """
        class Model(nn.Module):
            def forward(self, x):
                return x.amax(-1)

        def get_inputs():
            return [torch.randn(256, 512)]

        def get_init_inputs():
            return []
        """,
    # reductions over a dim other than the last: columns of [outer, n, inner] (the reduce template's INNER case)
    "sum_mid_keepdim": """
        class Model(nn.Module):
            def forward(self, x):
                return torch.sum(x, dim=1, keepdim=True) * 0.5

        def get_inputs():
            return [torch.randn(6, 300, 77)]

        def get_init_inputs():
            return []
        """,
    "mean_dim0": """
        class Model(nn.Module):
            def forward(self, x):
                return x.mean(0)

        def get_inputs():
            return [torch.randn(1100, 4, 40) + 3.0]

        def get_init_inputs():
            return []
        """,
    "amin_mid_nan": """
        class Model(nn.Module):
            def forward(self, x):
                return x.amin(dim=-2)

        def get_inputs():
            x = torch.randn(4, 1000, 9)
            x[1, 700, 4] = float("nan")
            x[3, 0, 8] = float("nan")
            return [x]

        def get_init_inputs():
            return []
        """,
    "max_long": """
        class Model(nn.Module):
            def forward(self, x):
                return torch.max(x, dim=-1, keepdim=True)[0] * 2

        def get_inputs():
            return [torch.randn(1, 30001)]

        def get_init_inputs():
            return []
        """,
    "bias_relu_odd": """
        class Model(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.b = nn.Parameter(torch.randn(n))

            def forward(self, x):
                return torch.relu(x * 2.0 + self.b)

        def get_inputs():
            return [torch.randn(97, 333)]

        def get_init_inputs():
            return [333]
        """,
    "chain": """
        class Model(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.b = nn.Parameter(torch.randn(n))

            def forward(self, x, y):
                return 1.0 / (torch.sigmoid(F.gelu(torch.tanh(x * 0.5) + y, approximate="tanh") * 2.0 - self.b) + 1.0)

        def get_inputs():
            return [torch.randn(256, 512), torch.randn(256, 512)]

        def get_init_inputs():
            return [512]
        """,
    "attn_odd": """
        class Model(nn.Module):
            def forward(self, q, k, v):
                # 3-D, causal with fewer queries than keys, head dims that are not whole vectors, own scale
                return F.relu(F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)) * 2.0

        def get_inputs():
            return [torch.randn(3, 37, 20), torch.randn(3, 53, 20), torch.randn(3, 53, 45)]

        def get_init_inputs():
            return []
        """,
    "attn_mask": """
        class Model(nn.Module):
            def forward(self, q, k, v, m):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=m)

        def get_inputs():
            return [torch.randn(2, 16, 8), torch.randn(2, 16, 8), torch.randn(2, 16, 8), torch.randn(16, 16)]

        def get_init_inputs():
            return []
        """,
    "sort": """
        class Model(nn.Module):
            def forward(self, x):
                return torch.sort(x, dim=-1).values

        def get_inputs():
            return [torch.randn(256, 512)]

        def get_init_inputs():
            return []
        """,
    "softmax_dim0": """
        class Model(nn.Module):
            def forward(self, x):
                return torch.softmax(x, dim=0)

        def get_inputs():
            return [torch.randn(64, 32)]

        def get_init_inputs():
            return []
        """,
    "two_branches": """
        class Model(nn.Module):
            def forward(self, x, y):
                return torch.relu(x) + torch.tanh(y)

        def get_inputs():
            return [torch.randn(64, 32), torch.randn(64, 32)]

        def get_init_inputs():
            return []
        """,
    "control_flow": """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = nn.LayerNorm(128)

            def forward(self, x):
                if x.sum() > -1e9:  # data-dependent: fx cannot trace it, the dispatch trace can
                    return torch.relu(self.norm(x))
                return x

        def get_inputs():
            return [torch.randn(64, 128)]

        def get_init_inputs():
            return []
        """,
    "rms_residual": """
        class Model(nn.Module):
            def forward(self, x, r):
                return F.rms_norm(x + r, (64,))

        def get_inputs():
            return [torch.randn(8, 64), torch.randn(8, 64)]

        def get_init_inputs():
            return []
        """,
    "linear_half": """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(32, 16).half()

            def forward(self, x):
                return self.fc(x)

        def get_inputs():
            return [torch.randn(8, 32).half()]

        def get_init_inputs():
            return []
        """,
    "half": """
        class Model(nn.Module):
            def forward(self, x):
                return torch.softmax(x, dim=-1)

        def get_inputs():
            return [torch.randn(64, 32).half()]

        def get_init_inputs():
            return []
        """,
}
CPP_SOURCES["matmul_t_whole_b"] = CPP_SOURCES["matmul_t"]  # the same GEMM under another parameter set


def write_cpp_problems(root: Path) -> dict[str, Path]:
    """CPP_SOURCES written under `root`, and the shipped problems: name -> path."""
    out = {}
    for name, body in CPP_SOURCES.items():
        path = root / f"{name}.py"
        path.write_text(HEADER + textwrap.dedent(body))
        out[name] = path
    for path in (dataset_dir() / "problems").glob("*.py"):
        out[path.stem] = path
    return out


def lazy_specs(problems: dict[str, Path]) -> dict[str, dict]:
    """name -> the problem's OpSpec, recognised in this process when first asked for."""

    class Lazy(dict):
        def __missing__(self, name):
            self[name] = analyze(str(problems[name]))
            json.dumps(self[name])  # an OpSpec is JSON-able
            return self[name]

    return Lazy()
