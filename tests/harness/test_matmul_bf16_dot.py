"""The matmul template's bf16 path on AVX512-BF16 (kernels_dataset/templates/matmul/bf16_pairs.h.j2): operands packed
as k-pairs, products by vdpbf16ps, against torch, on shapes with edges in M, N and K (an odd K, an odd last K
slice), transposed operands and batches. Each kernel runs in a child process. Skipped where the host (or the
level AGENTKERN_CPU_ISA holds it to) has no AVX512-BF16: there the operands are widened to fp32 instead."""

from __future__ import annotations

import subprocess

import pytest
from matmul_paths import render_kernel, run_check, write_problem

from agentkern import native

BF16 = "dtype=torch.bfloat16"

# name -> (forward body, inputs)
PROBLEMS = {
    "square": ("return torch.matmul(a, b)", f"torch.randn(128, 128, {BF16}), torch.randn(128, 128, {BF16})"),
    # an edge in M (37 = 3 x 12 + 1), N (70: a panel and a part) and an odd K
    "edges_odd_k": ("return torch.matmul(a, b)", f"torch.randn(37, 45, {BF16}), torch.randn(45, 70, {BF16})"),
    "k_of_one": ("return torch.matmul(a, b)", f"torch.randn(13, 1, {BF16}), torch.randn(1, 33, {BF16})"),
    # K in several slices, the last one odd (1031 = 5 x 176 + 151)
    "long_odd_k": ("return torch.matmul(a, b)", f"torch.randn(257, 1031, {BF16}), torch.randn(1031, 129, {BF16})"),
    # one batch of 3-D operands (bmm's, not a 2-D matmul's), A read transposed
    "a_transposed": (
        "return torch.bmm(a.transpose(1, 2), b)",
        f"torch.randn(1, 203, 77, {BF16}), torch.randn(1, 203, 100, {BF16})",
    ),
    "bmm": ("return torch.bmm(a, b)", f"torch.randn(2, 130, 41, {BF16}), torch.randn(2, 41, 95, {BF16})"),
    # B transposed, few rows and more columns: each thread packs pairs from its own panels of B^T (few_rows)
    "b_transposed_few_rows": (
        "return torch.matmul(a, b.T)",
        f"torch.randn(13, 77, {BF16}), torch.randn(100, 77, {BF16})",
    ),
    # enough batches for a batch a thread, B transposed: each thread packs its own pairs from B^T's rows
    "bmm_b_transposed_by_batch": (
        "return torch.bmm(a, b.transpose(1, 2))",
        f"torch.randn(5, 60, 73, {BF16}), torch.randn(5, 90, 73, {BF16})",
    ),
}


def _has_bf16_dot() -> bool:
    probe = subprocess.run(
        ["g++", *native.default_flags(), "-dM", "-E", "-x", "c++", "-"],
        input="",
        capture_output=True,
        text=True,
        check=False,
    )
    return probe.returncode == 0 and "__AVX512BF16__" in probe.stdout and "__AVX512BW__" in probe.stdout


pytestmark = pytest.mark.skipif(not _has_bf16_dot(), reason="no AVX512-BF16 at this host's ISA level")


# In a child process, as any candidate is. Each product is compared with torch's in float32 of the same bf16
# operands (exact products, fp32 sums): the kernel's only rounding is its fp32 accumulation order and the final
# rounding to bf16.
CHECK = """
    assert "#define AK_BF16_DOT 1" in kernel.CPP_SOURCE
    with torch.no_grad():
        for scale in (1.0, 16.0, 1 / 64):
            torch.manual_seed(1)
            xs = [x * scale for x in problem.get_inputs()]
            got = candidate(*xs)
            expected = reference(*[x.float() for x in xs])
            assert got.shape == expected.shape and got.dtype == torch.bfloat16, (got.shape, got.dtype)
            torch.testing.assert_close(got.float(), expected, atol=1e-2 * scale * scale, rtol=8e-3)
    print("ok")
"""


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_bf16_pair_products_match_torch(tmp_path, name):
    problem_path = write_problem(tmp_path, name, *PROBLEMS[name])
    kernel_path = render_kernel(problem_path, {"micro": "12x32", "amx": 0}, ("matmul", "bmm"))
    run_check(CHECK, problem_path, kernel_path)
