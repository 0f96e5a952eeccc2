"""The attention template's row max (kernels_dataset/templates/attention/cpp.py.j2): taken from the score
accumulators of every chunk of keys that all of a tile's rows see, and from the stored scores for the rest of
each row. The max is softmax's shift: a value a row does not see (a zero-padded key past the last one, a key
masked by causality) taken into it would push every exp the row does see below fp32's range, and the row would
come out as 0/0. Random inputs never show that; these do, by making every visible score far below zero (the
padding's zero would win) or making the masked keys' scores far above the visible ones (a masked key would win).
Checked against torch in a child process (tests/matmul_paths.run_check), at both vector widths."""

from __future__ import annotations

import pytest
from matmul_paths import MATCHES_TORCH, avx512_micro_kernels_run_here, render_kernel, run_check, write_problem

# Chunks of 16 keys (AVX2, nv 2) or 64 (AVX-512, nv 4): 53 keys end in a part-padded chunk; 150 causal rows
# have whole chunks that all of a tile's rows see at both widths.
CASES = {
    # every score about -400 (scale 1): a zero from the padding would be the max, and exp(-400) is 0
    "padding": (
        "False",
        "-(torch.rand(2, 37, 20) + 1) * 3, (torch.rand(2, 53, 20) + 1) * 3, torch.randn(2, 53, 24)",
    ),
    # key j's score is 40 j for every query: each row's max is its own diagonal key, and the keys a tile's later
    # rows see (masked for this row) are 40-200 higher, so taking them into the max underflows the row's exps
    "causal": (
        "True",
        "torch.ones(2, 150, 20) * 0.5, torch.arange(150.0).view(1, 150, 1).expand(2, 150, 20) * 4, torch.randn(2, 150, 24)",
    ),
}
WIDTHS = {"avx2": {"simd": "avx2", "mb": 6, "nv": 2}, "avx512": {"simd": "avx512", "mb": 6, "nv": 4}}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", CASES)
def test_the_row_max_takes_only_the_scores_a_row_sees(tmp_path, case, width):
    if width == "avx512" and not avx512_micro_kernels_run_here():
        pytest.skip("AVX-512 vectors on a host without AVX-512")
    causal, inputs = CASES[case]
    forward = f"return F.scaled_dot_product_attention(q, k, v, is_causal={causal}, scale=1.0)"
    problem_path = write_problem(tmp_path, case, forward, inputs, args="q, k, v")
    kernel_path = render_kernel(problem_path, WIDTHS[width], ("attention",))
    run_check(MATCHES_TORCH, problem_path, kernel_path, "1e-4")
