"""The matmul template's FMA path when row blocks as large as MC leave fewer than two jobs a thread
(kernels_dataset/templates/matmul/cpp.py.j2, `mblocks`): the rows are cut into two blocks a thread while each
keeps 8 panels or more, and only below that does a row block go out in column parts. Checked against torch at
MC 216 (the Zen 3 default) on the threads this host has and on one thread, with an edge row panel, an edge
column panel, two K slices and a fused epilogue; each kernel runs in a child process."""

from __future__ import annotations

import pytest
from matmul_paths import MATCHES_TORCH, render_kernel, run_check, write_problem

# (case, M, forward, OpenMP threads: None for this host's). At 2 threads: 256 rows (43 panels of 6) were two
# blocks cut into column parts before the rule and are four blocks now, 262 the same with an edge panel; 150 rows
# (25 panels) are too few for four blocks of 8 panels: two blocks, each in column parts. On one thread, 200 rows
# (34 panels) are two blocks.
CASES = [
    ("rows_first", 256, "return torch.matmul(a, b)", None),
    ("rows_first_epilogue", 262, "return torch.relu(torch.matmul(a, b) - 0.5)", None),
    ("column_parts", 150, "return torch.matmul(a, b)", None),
    ("one_thread", 200, "return torch.matmul(a, b)", 1),
]


@pytest.mark.parametrize("case,m,forward,threads", CASES)
def test_row_blocks_of_an_mc_larger_than_a_share_match_torch(tmp_path, monkeypatch, case, m, forward, threads):
    if threads:
        monkeypatch.setenv("OMP_NUM_THREADS", str(threads))
    params = {"micro": "6x16", "kc": 192, "mc": 216, "amx": 0}
    problem_path = write_problem(tmp_path, case, forward, f"torch.randn({m}, 300), torch.randn(300, 261)")
    kernel_path = render_kernel(problem_path, params, ("matmul",))
    run_check(MATCHES_TORCH, problem_path, kernel_path, "1e-4")
