"""The matmul template's AMX path (kernels_dataset/templates/matmul/amx.h.j2): fp32 products as six bf16 tile
products, bf16 as one, against torch, on shapes with edges in M, N and K, a transposed weight, a fused epilogue
and batches. Each kernel runs in a child process. Skipped where the host has no AMX-BF16."""

from __future__ import annotations

import pytest
from matmul_paths import render_kernel, run_check, write_problem

from agentkern.policies.builtin import templates as T
from agentkern.targets import get_target

# name -> (forward body, inputs, init inputs). fp32 takes the tiles from 256 rows and columns on (cpp.py.j2's
# amx_pays): every fp32 shape here does, with edges in M, N and K.
PROBLEMS = {
    "matmul_edges": ("return torch.matmul(a, b)", "torch.randn(517, 77), torch.randn(77, 1030)", ""),
    # at the threshold: two row pairs and a half, a K of 9 k steps and a bit
    "matmul_256": ("return torch.matmul(a, b)", "torch.randn(256, 300), torch.randn(300, 270)", ""),
    "linear_bias_gelu": (
        "return F.gelu(self.fc(x))",
        "torch.randn(300, 95)",
        "self.fc = nn.Linear(95, 1800)",
    ),
    "bmm": ("return torch.bmm(a, b)", "torch.randn(2, 520, 40), torch.randn(2, 40, 1010)", ""),
    # Enough batches for a batch a thread (2 or more threads): each packs its own operands.
    "bmm_by_batch": ("return torch.bmm(a, b)", "torch.randn(5, 260, 70), torch.randn(5, 70, 300)", ""),
    "bmm_transposed_by_batch": (
        "return torch.bmm(a, b.transpose(1, 2))",
        "torch.randn(5, 260, 70), torch.randn(5, 300, 70)",
        "",
    ),
    "matmul_bf16": (
        "return torch.matmul(a, b)",
        "torch.randn(37, 45, dtype=torch.bfloat16), torch.randn(45, 70, dtype=torch.bfloat16)",
        "",
    ),
    # K past one K block (16 k steps of 32 in fp32, 48 in bf16): operands are packed a K block at a time, and C
    # accumulates over the blocks; the last block short, with an edge in K.
    "linear_long_k": ("return self.fc(x)", "torch.randn(300, 1100)", "self.fc = nn.Linear(1100, 260)"),
    # K four times the larger of M and N or more, with two or more threads (gemm_amx_k_split): K blocks handed out to
    # the threads, each summing into a C of its own, the sums added into C with the epilogue; the last K block short.
    "matmul_long_k": ("return torch.matmul(a, b)", "torch.randn(260, 1100), torch.randn(1100, 270)", ""),
    "linear_deep_k_bias_relu": (
        "return torch.relu(self.fc(x))",
        "torch.randn(270, 2100)",
        "self.fc = nn.Linear(2100, 260)",
    ),
    "bmm_deep_k": ("return torch.bmm(a, b)", "torch.randn(2, 256, 1300), torch.randn(2, 1300, 300)", ""),
    # With two or more threads, operands large enough for four chunks or more (gemm_amx_shared): the smaller one's K
    # blocks packed once and shared, the other's row pairs (tall) or column pairs (wide) handed out in chunks, each
    # running its whole K loop; B row-major (shared by k steps, the last K block short) and transposed.
    "matmul_tall_long_k": ("return torch.matmul(a, b)", "torch.randn(600, 1100), torch.randn(1100, 300)", ""),
    "linear_tall_long_k": ("return self.fc(x)", "torch.randn(600, 1100)", "self.fc = nn.Linear(1100, 300)"),
    "matmul_wide_long_k": ("return torch.matmul(a, b)", "torch.randn(300, 1100), torch.randn(1100, 600)", ""),
    "linear_wide_long_k_relu": (
        "return torch.relu(self.fc(x))",
        "torch.randn(300, 1100)",
        "self.fc = nn.Linear(1100, 600)",
    ),
    "bmm_long_k_by_batch": ("return torch.bmm(a, b)", "torch.randn(5, 260, 600), torch.randn(5, 600, 270)", ""),
    "matmul_bf16_long_k": (
        "return torch.matmul(a, b)",
        "torch.randn(40, 1600, dtype=torch.bfloat16), torch.randn(1600, 70, dtype=torch.bfloat16)",
        "",
    ),
}


# fp32 products whose inputs also get +-inf and a value near FLT_MAX: the three-part split cannot hold them
# (inf - inf is NaN), so the kernel must notice while packing and take its FMA path, as torch would answer.
NONFINITE = ("matmul_edges", "matmul_256", "bmm", "bmm_by_batch", "bmm_transposed_by_batch")
# ... and with the infinite value only in the last K block, found after C has taken the earlier blocks' products:
# the FMA path must still write every value of C again.
NONFINITE_LATE = (
    "matmul_long_k",  # found by one thread of the deep-K split, after the others summed their K blocks
    "bmm_deep_k",
    "linear_long_k",
    "bmm_long_k_by_batch",
    "matmul_tall_long_k",  # found while a chunk packs its rows of A
    "linear_tall_long_k",
    "matmul_wide_long_k",  # found while shared A is packed
)


def _has_amx() -> bool:
    target = get_target("cpu")
    return "amx_bf16" in T.host_features(target.simd_width_bits, "amx_bf16" in target.peak_tflops)


pytestmark = pytest.mark.skipif(not _has_amx(), reason="the host has no AMX-BF16 tiles")


# Run in a child process (matmul_paths.run_check): argv[3] the tolerance, argv[4] which non-finite inputs.
CHECK = """
    tol = float(sys.argv[3])
    with torch.no_grad():
        for scale in (1.0, 16.0, 1 / 64):  # the split into bf16 parts is relative: exact at any scale
            torch.manual_seed(1)
            xs = [x * scale for x in problem.get_inputs()]
            expected, got = reference(*xs), candidate(*xs)
            assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, got.dtype)
            torch.testing.assert_close(got, expected, atol=tol * scale * scale, rtol=tol)
        late = {"nonfinite": False, "nonfinite_late": True}.get(sys.argv[4])
        if late is not None:
            torch.manual_seed(1)
            xs = problem.get_inputs()
            first = xs[0].view(-1)
            if late:  # only in the last row, three columns before its end: the last K block
                first[-3] = float("inf")
            else:  # +-inf, and a value whose leading bf16 part rounds to inf
                first[5], first[first.numel() // 2], first[-3] = float("inf"), float("-inf"), 3.4e38
            expected, got = reference(*xs), candidate(*xs)
            assert not expected.isfinite().all()
            torch.testing.assert_close(got, expected, atol=tol, rtol=tol, equal_nan=True)
    print("ok")
"""


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_amx_products_match_torch(tmp_path, name):
    problem_path = write_problem(tmp_path, name, *PROBLEMS[name])
    kernel_path = render_kernel(problem_path, {"amx": 1, "micro": "12x32"}, ("matmul", "linear", "bmm"))
    tol = "1e-2" if "bf16" in name else "1e-4"
    # torch's own gelu of -inf is NaN where the erf form says 0: non-finite inputs only without an epilogue
    nonfinite = "nonfinite" if name in NONFINITE else "nonfinite_late" if name in NONFINITE_LATE else "finite"
    run_check(CHECK, problem_path, kernel_path, tol, nonfinite)


# The search takes two candidates whose only difference is a parameter their path does not read for one kernel
# (policies/builtin/kernel_paths.py, from cpp.json's "paths"). Here that rule is held against the kernel's own
# dispatch: the tiles' sums round differently from the FMA path's, so a kernel rendered with amx=1 gives the
# amx=0 kernel's output bit for bit exactly where the rule says it takes the FMA path. Child: argv[3] the amx=0
# kernel, argv[4] "same" or "differs".
SAME_AS_FMA = """
    fma = load(sys.argv[3], "fma")
    torch.manual_seed(0)
    other = fma.ModelNew().eval()
    with torch.no_grad():
        torch.manual_seed(1)
        xs = problem.get_inputs()
        same = torch.equal(candidate(*xs), other(*xs))
    assert same == (sys.argv[4] == "same"), ("the same" if same else "different") + " outputs"
    print("ok")
"""
AROUND_THE_THRESHOLDS = {
    "fp32_at_256": PROBLEMS["matmul_256"],
    "fp32_rows_255": ("return torch.matmul(a, b)", "torch.randn(255, 300), torch.randn(300, 270)", ""),
    "fp32_transposed_a": ("return torch.matmul(a.T, b)", "torch.randn(300, 300), torch.randn(300, 300)", ""),
    "bf16_at_32": (
        "return torch.matmul(a, b)",
        "torch.randn(32, 300, dtype=torch.bfloat16), torch.randn(300, 40, dtype=torch.bfloat16)",
        "",
    ),
    "bf16_k_31": (
        "return torch.matmul(a, b)",
        "torch.randn(64, 31, dtype=torch.bfloat16), torch.randn(31, 64, dtype=torch.bfloat16)",
        "",
    ),
}


@pytest.mark.parametrize("name", list(AROUND_THE_THRESHOLDS))
def test_the_path_the_search_assumes_is_the_one_the_kernel_takes(tmp_path, name):
    from agentkern.policies.builtin import kernel_paths
    from agentkern.policies.builtin.recognize import analyze

    problem_path = write_problem(tmp_path, name, *AROUND_THE_THRESHOLDS[name])
    spec = analyze(str(problem_path))
    target = get_target("cpu")
    path = kernel_paths.timed_path(spec, {"amx": 1}, "cpp", T.host_features(target.simd_width_bits, True))
    assert path in ("amx", "fma")
    on_tiles = render_kernel(problem_path, {"amx": 1, "micro": "12x32"}, ("matmul", "linear"))
    fma = on_tiles.with_name("fma_kernel.py")
    fma.write_text(T.render(spec, {"amx": 0, "micro": "12x32"}))
    run_check(SAME_AS_FMA, problem_path, on_tiles, str(fma), "same" if path == "fma" else "differs")
