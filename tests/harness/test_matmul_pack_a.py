"""The matmul template's packing of A (kernels_dataset/templates/matmul/cpp.py.j2, `pack_a`) at every micro-kernel
height, this host's or not: whole 8-lane stores whose extra lanes spill onto the next k's rows, the last group
of rows stored first so that the groups after it overwrite the spill. The template's own `transpose8`, `scratch`
and `pack_a` are compiled with AVX2 alone at MR 4, 6, 8, 12 and 14 (12 and 14 are the AVX-512 micro-kernels'
heights, whose kernels do not build on an AVX2 host) and checked against packing element by element: panels
with zero rows past M, k blocks of 8 with a tail, A wider than kc."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from matmul_paths import render_kernel, write_problem

CHECK = r"""
#include <initializer_list>
#include <immintrin.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define AK_BF16_DOT 0
constexpr bool TRANS_A = false;
constexpr int64_t MR = MR_UNDER_TEST;
using elem_t = float;
static inline float to_f32(float v) { return v; }
static inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
PIECES
int main() {
    long wrong = 0;
    for (int64_t mc : {MR, 2 * MR, 5 * MR - 3, (int64_t)37})
        for (int64_t kc : {(int64_t)8, (int64_t)19, (int64_t)64, (int64_t)67}) {
            const int64_t lda = kc + 5, panels = (mc + MR - 1) / MR;
            std::vector<float> A(mc * lda);
            for (size_t i = 0; i < A.size(); ++i) A[i] = (float)(i % 1009) + 0.5f;
            float* Ap = scratch(0, panels * MR * kc);
            for (int64_t i = 0; i < panels * MR * kc; ++i) Ap[i] = -1.0f;
            pack_a(mc, kc, A.data(), lda, Ap);
            for (int64_t p = 0; p < panels; ++p)
                for (int64_t k = 0; k < kc; ++k)
                    for (int64_t r = 0; r < MR; ++r) {
                        const int64_t row = p * MR + r;
                        wrong += Ap[(p * kc + k) * MR + r] != (row < mc ? A[row * lda + k] : 0.0f);
                    }
        }
    std::printf("%ld\n", wrong);
    return 0;
}
"""


def _function(source: str, signature: str) -> str:
    """A top-level function of the rendered source, from its signature to its closing brace at column 0."""
    match = re.search(re.escape(signature) + r".*?\n}\n", source, re.S)
    assert match, signature
    return match.group(0)


@pytest.fixture(scope="module")
def pieces(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("pack_a")
    problem = write_problem(folder, "mm", "return torch.matmul(a, b)", "torch.randn(64, 64), torch.randn(64, 64)")
    source = render_kernel(problem, {"micro": "6x16"}, ("matmul",)).read_text()
    lane_mask = _function(source, "static inline vmask lane_mask(").replace("vmask", "__m256i")
    names = ("static inline void transpose8(", "static float* scratch(", "static void pack_a(")
    return lane_mask + "".join(_function(source, name) for name in names)


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
@pytest.mark.parametrize("mr", [4, 6, 8, 12, 14])
def test_packed_a_holds_every_element_at_every_micro_kernel_height(tmp_path, pieces, mr):
    check = tmp_path / "check.cpp"
    check.write_text(CHECK.replace("PIECES", pieces).replace("MR_UNDER_TEST", str(mr)))
    binary = tmp_path / "check"
    build = subprocess.run(
        ["g++", "-O2", "-mavx2", "-mfma", "-std=c++17", str(check), "-o", str(binary)], capture_output=True, text=True
    )
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "0", (run.stdout, run.stderr[-2000:])
