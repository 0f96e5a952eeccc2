"""The matmul template's choice to read fp32 A in place (kernels_dataset/templates/matmul/cpp.py.j2: A is packed
only when N spans more column panels than the threshold in the rendered kernel). With `pack_a` on, the
products on both sides of that threshold, each with an edge column panel and an edge row panel, must match
torch: row-major A with a fused epilogue, A read transposed, and a batch (each thread its own batches), at both
vector widths' micro-kernels. Each kernel runs in a child process."""

from __future__ import annotations

import re

import pytest
from matmul_paths import MATCHES_TORCH, MICROS, avx512_micro_kernels_run_here, render_kernel, run_check, write_problem

FORWARDS = {
    "epilogue": ("return torch.relu(torch.matmul(a, b) + 0.25)", "torch.randn(203, 300), torch.randn(300, {n})"),
    "transposed_a": ("return torch.matmul(a.T, b)", "torch.randn(300, 203), torch.randn(300, {n})"),
    "batched": ("return torch.bmm(a, b)", "torch.randn(6, 77, 200), torch.randn(6, 200, {n})"),
}
CASES = [("epilogue", "12x32"), ("transposed_a", "6x16"), ("batched", "6x16")]


def _threshold(kernel_source: str) -> int:
    """The panel count over which the rendered kernel packs A (one definition: the template's)."""
    found = re.search(r"\(N \+ NR - 1\) / NR > (\d+);", kernel_source)
    assert found, "the rendered kernel no longer states when it packs A"
    return int(found.group(1))


@pytest.mark.parametrize("case,micro", CASES)
def test_products_either_side_of_the_packing_threshold_match_torch(tmp_path, case, micro):
    if "x32" in micro and not avx512_micro_kernels_run_here():
        pytest.skip("an AVX-512 micro-kernel on a host without AVX-512")
    nr = MICROS[micro]
    params = {"micro": micro, "kc": 128, "amx": 0, "pack_a": True}
    forward, inputs = FORWARDS[case]
    # the width is only known once a kernel is rendered: render one first, to read the threshold
    probe = render_kernel(
        write_problem(tmp_path, f"{case}_probe", forward, inputs.format(n=nr)), params, ("matmul", "bmm")
    )
    panels = _threshold(probe.read_text())
    # the last panel of each side an edge one: in place at `panels` panels, packed at one past it
    for side, n in (("in_place", panels * nr - 5), ("packed", panels * nr + 5)):
        problem_path = write_problem(tmp_path, f"{case}_{side}", forward, inputs.format(n=n))
        kernel_path = render_kernel(problem_path, params, ("matmul", "bmm"))
        run_check(MATCHES_TORCH, problem_path, kernel_path, "1e-4")
