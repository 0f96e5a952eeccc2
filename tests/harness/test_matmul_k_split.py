"""The matmul template's deep-K path (kernels_dataset/templates/matmul/cpp.py.j2, `k_split`): with K at least
four times M and N and a C that fits in half of L2, each thread sums its own run of K slices into its own copy
of C, and the copies are added with the epilogue after. Checked against torch with edges in M, N and K (a short
last slice): a fused epilogue, A read transposed, a linear layer's transposed weight with its bias, and a batch
of two (each batch's copies added before the next one reuses them), fp16 operands (widened as they are packed,
summed in fp32, rounded once), at both vector widths' micro-kernels. The kernels run on two threads
(OMP_NUM_THREADS), the least the path takes, in a child process each."""

from __future__ import annotations

import pytest
from matmul_paths import MATCHES_TORCH, avx512_micro_kernels_run_here, render_kernel, run_check, write_problem

# M = 70, N = 45, K = 1100: K over four times M and N; at kc 128 nine slices, which the path cuts into ten
# (112 deep, the last 92) so that two threads get five each. A is scaled by 1/sqrt(K) so the sums stay O(1).
SCALE = "/ 1100 ** 0.5"
CASES = {
    "epilogue": (
        "12x32",
        "return torch.relu(torch.matmul(a, b) + 0.25)",
        f"torch.randn(70, 1100) {SCALE}, torch.randn(1100, 45)",
        "",
    ),
    "transposed_a": (
        "6x16",
        "return torch.matmul(a.T, b)",
        f"torch.randn(1100, 70) {SCALE}, torch.randn(1100, 45)",
        "",
    ),
    "linear": ("6x16", "return self.fc(x)", f"torch.randn(70, 1100) {SCALE}", "self.fc = nn.Linear(1100, 45)"),
    # fp16 out: one rounding of an O(1) value, about 1e-3
    "fp16": (
        "6x16",
        "return torch.matmul(a, b)",
        f"(torch.randn(70, 1100) {SCALE}).half(), torch.randn(1100, 45).half()",
        "",
    ),
    "batched": ("12x32", "return torch.bmm(a, b)", f"torch.randn(2, 70, 1100) {SCALE}, torch.randn(2, 1100, 45)", ""),
}


@pytest.mark.parametrize("case", list(CASES))
def test_deep_k_products_summed_per_thread_match_torch(tmp_path, monkeypatch, case):
    micro, forward, inputs, init = CASES[case]
    if "x32" in micro and not avx512_micro_kernels_run_here():
        pytest.skip("an AVX-512 micro-kernel on a host without AVX-512")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    problem_path = write_problem(tmp_path, case, forward, inputs, init)
    kernel_path = render_kernel(problem_path, {"micro": micro, "kc": 128, "amx": 0}, ("matmul", "bmm", "linear"))
    run_check(MATCHES_TORCH, problem_path, kernel_path, "4e-3" if case == "fp16" else "1e-4")
