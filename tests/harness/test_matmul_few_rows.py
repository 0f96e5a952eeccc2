"""The matmul template's few-rows path (kernels_dataset/templates/matmul/cpp.py.j2, `few_rows`): a linear layer's
product (B transposed) with more columns than rows, each thread packing its own column panels one at a time,
against torch, on shapes with edges in M, N and K (K in several slices, a last slice short of 8), a fused
epilogue, a row operation, batches that are too few for a batch a thread, and half-precision operands, at both
vector widths' micro-kernels. Each kernel runs in a child process. The same shapes transposed the other way (N <=
M) take the shared path, checked alongside."""

from __future__ import annotations

import pytest
from matmul_paths import avx512_micro_kernels_run_here, render_kernel, run_check, write_problem

# name -> (forward body, inputs, init inputs)
PROBLEMS = {
    # M = 19: a full row panel and an edge at both micro-kernels; N = 333: panels and a part; K = 300: two
    # slices at kc 192, three at 128.
    "linear_edges": ("return torch.tanh(self.fc(x))", "torch.randn(19, 300)", "self.fc = nn.Linear(300, 333)"),
    # the row operation after the product; K = 129: the transposing pack's tail of one k
    "linear_softmax": (
        "return torch.softmax(self.fc(x) * 0.1, dim=-1)",
        "torch.randn(7, 129)",
        "self.fc = nn.Linear(129, 200)",
    ),
    # three batches: too few for a batch a thread on two threads, so they share each batch's column panels
    "bmm_b_transposed": (
        "return torch.bmm(a, b.transpose(1, 2))",
        "torch.randn(3, 10, 200), torch.randn(3, 150, 200)",
        "",
    ),
    "matmul_fp16_b_transposed": (
        "return torch.matmul(a, b.T)",
        "torch.randn(21, 96, dtype=torch.float16), torch.randn(130, 96, dtype=torch.float16)",
        "",
    ),
    # N <= M: the shared path (B packed once for every thread), the same template otherwise
    "linear_wide_rows": ("return torch.tanh(self.fc(x))", "torch.randn(333, 300)", "self.fc = nn.Linear(300, 19)"),
}
MICROS = ("6x16", "12x32")

CHECK = """
    with torch.no_grad():
        for scale in (1.0, 8.0):
            torch.manual_seed(1)
            xs = [x * scale for x in problem.get_inputs()]
            got = candidate(*xs)
            expected = reference(*[x.float() for x in xs])
            assert got.shape == expected.shape and got.dtype == xs[0].dtype, (got.shape, got.dtype)
            tol = 2e-2 if got.dtype == torch.float16 else 1e-4
            torch.testing.assert_close(got.float(), expected, atol=tol * scale * scale, rtol=tol)
    print("ok")
"""


@pytest.mark.parametrize("micro", MICROS)
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_few_rows_products_match_torch(tmp_path, name, micro):
    if "x32" in micro and not avx512_micro_kernels_run_here():
        pytest.skip("an AVX-512 micro-kernel on a host without AVX-512")
    forward, inputs, init = PROBLEMS[name]
    problem_path = write_problem(tmp_path, name, forward, inputs, init)
    kernel_path = render_kernel(problem_path, {"micro": micro, "kc": 128, "amx": 0}, ("linear", "matmul", "bmm"))
    run_check(CHECK, problem_path, kernel_path)
