"""The matmul template's FMA path on a B slice wider than half of this core's L2
(kernels_dataset/templates/matmul/cpp.py.j2, `block`): the slice's column panels go past each row block in runs
that fit there, so a product this wide takes two runs or more. Checked against torch with edges in M, N and K
(K in two slices), a fused epilogue, A read transposed, and A read in place (not packed), at both vector widths'
micro-kernels. The widths are computed from the L2 size the kernel reads (sysconf), so every host takes
several runs. Each kernel runs in a child process."""

from __future__ import annotations

import os

import pytest
from matmul_paths import MATCHES_TORCH, MICROS, avx512_micro_kernels_run_here, render_kernel, run_check, write_problem

# The K slice the kernels are rendered with, and K = two whole slices: every slice is KC deep, so one panel count
# a run holds for all of them. (The run logic does not depend on a slice's depth; the short last slice is
# test_matmul_few_rows.py's.)
KC, K = 384, 768


def _l2_bytes() -> int:
    size = os.sysconf("SC_LEVEL2_CACHE_SIZE") if "SC_LEVEL2_CACHE_SIZE" in os.sysconf_names else 0
    return size if size > 0 else 1 << 20  # what the kernel assumes where sysconf does not say


def _columns(nr: int, runs: int) -> int:
    """A width of `runs` runs of panels and a part of one (an edge panel in the last run). Past the template's
    column block (at most 4080 wide) it is cut in even blocks, each still two runs or more."""
    panels_a_run = max(1, _l2_bytes() // 2 // (nr * KC * 4))
    return runs * panels_a_run * nr + 5


# The run logic is the same at both widths: each case once, the plain product at both (a build is ~15 s).
CASES = [("matmul", "6x16"), ("matmul", "12x32"), ("a_in_place", "12x32"), ("transposed_a_epilogue", "6x16")]


@pytest.mark.parametrize("case,micro", CASES)
def test_a_slice_wider_than_half_of_l2_goes_past_in_runs_and_matches_torch(tmp_path, case, micro):
    if "x32" in micro and not avx512_micro_kernels_run_here():
        pytest.skip("an AVX-512 micro-kernel on a host without AVX-512")
    n = _columns(MICROS[micro], 3)
    params = {"micro": micro, "kc": KC, "amx": 0, "pack_a": case != "a_in_place"}
    # M = 601: an edge row panel at both micro-kernels, and enough row blocks that no block is cut in column
    # parts (which would give each call too few panels for two runs) up to 4 threads
    if case in ("matmul", "a_in_place"):
        forward, inputs = "return torch.matmul(a, b)", f"torch.randn(601, {K}), torch.randn({K}, {n})"
    else:
        forward, inputs = (
            "return torch.relu(torch.matmul(a.T, b) - 0.5)",
            f"torch.randn({K}, 601), torch.randn({K}, {n})",
        )
    problem_path = write_problem(tmp_path, case, forward, inputs)
    kernel_path = render_kernel(problem_path, params, ("matmul",))
    run_check(MATCHES_TORCH, problem_path, kernel_path, "1e-4")
