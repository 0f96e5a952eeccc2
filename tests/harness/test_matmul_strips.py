"""The matmul template's column strips (kernels_dataset/templates/matmul/cpp.py.j2, b_block "strips", the default
on Intel CPUs): each thread takes whole strips of C's columns as it asks for them and runs every K slice and row
block of its strip with a packed B of its own. Checked against torch with edges in M, N and K (panels cut short,
a short last K slice): a fused epilogue, A read transposed, a linear layer's transposed weight with its bias, a
batch of two (fewer than two a thread: strips of both batches handed out together), fp16 and bf16 operands
(widened, or bf16 pairs, as they are packed), strips wide enough that A is packed rather than read in place, a
row softmax after the product, on two threads and on one; and a tall, skinny product, which the kernel gives to
the shared path instead."""

from __future__ import annotations

import pytest
from matmul_paths import MATCHES_TORCH, avx512_micro_kernels_run_here, render_kernel, run_check, write_problem

# K = 700 in 128-deep slices: six slices, the last 60 deep. A is scaled by 1/sqrt(K) so the sums stay O(1).
SCALE = "/ 700 ** 0.5"
CASES = {
    # 150 rows (12 row panels, the last 6 rows), 300 columns (10 panels, the last 12 wide)
    "epilogue": (
        "12x32",
        "return torch.relu(torch.matmul(a, b) + 0.25)",
        f"torch.randn(150, 700) {SCALE}, torch.randn(700, 300)",
        "",
    ),
    "transposed_a": (
        "6x16",
        "return torch.matmul(a.T, b)",
        f"torch.randn(700, 150) {SCALE}, torch.randn(700, 300)",
        "",
    ),
    # more rows than columns: not the few-rows path, which takes a linear layer's wide, short products
    "linear": ("6x16", "return self.fc(x)", f"torch.randn(300, 700) {SCALE}", "self.fc = nn.Linear(700, 150)"),
    "linear_wide": ("12x32", "return self.fc(x)", f"torch.randn(300, 700) {SCALE}", "self.fc = nn.Linear(700, 200)"),
    "batched": ("12x32", "return torch.bmm(a, b)", f"torch.randn(2, 150, 700) {SCALE}, torch.randn(2, 700, 300)", ""),
    # tall and skinny: all of B packed (300 x 64) fits half of any L2, A (3.6 MB) does not, so not strips but
    # the shared path, A read once against every K slice of B (strips_pay)
    "tall_skinny": (
        "6x16",
        "return torch.matmul(a, b)",
        "torch.randn(3000, 300) / 300 ** 0.5, torch.randn(300, 64)",
        "",
    ),
    # 38 panels of 16 in four strips of 9-10: past PACK_MIN_PANELS, so each strip packs A
    "packed_a": ("6x16", "return torch.matmul(a, b)", f"torch.randn(100, 700) {SCALE}, torch.randn(700, 600)", ""),
    "softmax": (
        "12x32",
        "return torch.softmax(torch.matmul(a, b), dim=-1)",
        f"torch.randn(150, 700) {SCALE}, torch.randn(700, 300)",
        "",
    ),
    # fp16 / bf16 out: one rounding of an O(1) value. Widened A is packed for every strip, so strips are taken
    # only 8 panels wide or more: 38 panels of 16, 35 of 32.
    "fp16": (
        "6x16",
        "return torch.matmul(a, b)",
        f"(torch.randn(150, 700) {SCALE}).half(), torch.randn(700, 600).half()",
        "",
    ),
    "bf16": (
        "12x32",
        "return torch.matmul(a, b)",
        f"(torch.randn(150, 700) {SCALE}).bfloat16(), torch.randn(700, 1100).bfloat16()",
        "",
    ),
}
TOLERANCE = {"fp16": "4e-3", "bf16": "3e-2"}


# every case on two threads; on one (two strips, taken in turn), the cases whose strips differ most
RUNS = [(case, "2") for case in CASES] + [(case, "1") for case in ("epilogue", "batched", "packed_a")]


@pytest.mark.parametrize(("case", "threads"), RUNS)
def test_column_strips_each_thread_packing_its_own_b_match_torch(tmp_path, monkeypatch, case, threads):
    micro, forward, inputs, init = CASES[case]
    if "x32" in micro and not avx512_micro_kernels_run_here():
        pytest.skip("an AVX-512 micro-kernel on a host without AVX-512")
    monkeypatch.setenv("OMP_NUM_THREADS", threads)
    problem_path = write_problem(tmp_path, case, forward, inputs, init)
    params = {"micro": micro, "kc": 128, "b_block": "strips", "amx": 0}
    kernel_path = render_kernel(problem_path, params, ("matmul", "bmm", "linear", "gemm_softmax"))
    run_check(MATCHES_TORCH, problem_path, kernel_path, TOLERANCE.get(case, "1e-4"))
