"""
Row sum in C++ (OpenMP + AVX2), fp32
=====================================

Computes ``x.sum(dim=-1)`` for a float32 tensor of any shape: ``(..., n) -> (...)``.

Algorithm
---------
Each row is summed in blocks of 2048 values. Inside a block, eight independent AVX accumulators (64
partial sums) take one vector each per step; at the end of the block they are added pairwise (a tree:
8 -> 4 -> 2 -> 1 vector) and the block's 8 lane sums are added, in double precision, to a per-row double
accumulator. The row's remainder goes through masked loads (zeros past the end), so there is no scalar
tail loop and nothing is read past the row.

Rows are shared among the cores with ``#pragma omp parallel for``. When there are fewer rows than cores
(one very long row, say), the blocks of each row are shared instead, with an OpenMP ``reduction`` over the
double block sums.

Why it is fast, and accurate
----------------------------
* A single running sum is a chain of dependent adds: one vector per add latency (3 cycles on Zen 3).
  Eight independent accumulators keep both FP adders busy, so the loop runs at load bandwidth.
* Accuracy: a float running sum over ``n`` values has an error growing like ``n * eps``. Here a float
  partial sum never covers more than 2048 / 64 = 32 values, the tree adds 8 more levels, and everything
  above a block is double. The result is within a few ulp of the exact sum for any ``n``, as tight as
  ``torch.sum`` (itself a cascade sum) or tighter.
"""

import ctypes
import math

import torch
import torch.nn as nn

from agentkern.native import compile_cpp, ptr

CPP_SOURCE = r"""
#include <immintrin.h>
#include <omp.h>
#include <cstdint>

constexpr int64_t BLOCK = 2048;  // values per float-accumulated block

static inline double hsum_pd(__m256 v) {
    __m256d d = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                              _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(d), _mm256_extractf128_pd(d, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}

// Sum of x[0 .. len), len <= BLOCK, with 8 vector accumulators and a pairwise merge.
static inline double block_sum(const float* __restrict x, int64_t len) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    int64_t i = 0;
    for (; i + 64 <= len; i += 64) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
        a4 = _mm256_add_ps(a4, _mm256_loadu_ps(x + i + 32));
        a5 = _mm256_add_ps(a5, _mm256_loadu_ps(x + i + 40));
        a6 = _mm256_add_ps(a6, _mm256_loadu_ps(x + i + 48));
        a7 = _mm256_add_ps(a7, _mm256_loadu_ps(x + i + 56));
    }
    // Leftover (< 64 values): up to 7 whole vectors, one per accumulator, then a masked partial one.
    auto part = [&](int64_t at) {  // x[at .. min(at + 8, len)), zeros past the end
        const int64_t left = len - at;
        if (left >= 8) return _mm256_loadu_ps(x + at);
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(left > 0 ? (int)left : 0),
                                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        return _mm256_maskload_ps(x + at, mask);
    };
    if (i < len) {
        a0 = _mm256_add_ps(a0, part(i));
        a1 = _mm256_add_ps(a1, part(i + 8));
        a2 = _mm256_add_ps(a2, part(i + 16));
        a3 = _mm256_add_ps(a3, part(i + 24));
        a4 = _mm256_add_ps(a4, part(i + 32));
        a5 = _mm256_add_ps(a5, part(i + 40));
        a6 = _mm256_add_ps(a6, part(i + 48));
        a7 = _mm256_add_ps(a7, part(i + 56));
    }
    a0 = _mm256_add_ps(a0, a1); a2 = _mm256_add_ps(a2, a3);
    a4 = _mm256_add_ps(a4, a5); a6 = _mm256_add_ps(a6, a7);
    a0 = _mm256_add_ps(a0, a2); a4 = _mm256_add_ps(a4, a6);
    return hsum_pd(_mm256_add_ps(a0, a4));
}

static inline float row_sum(const float* __restrict x, int64_t n) {
    double total = 0.0;
    for (int64_t j = 0; j < n; j += BLOCK)
        total += block_sum(x + j, (n - j < BLOCK) ? n - j : BLOCK);
    return (float)total;
}

extern "C" void sum_rows_f32(const float* x, float* y, int64_t rows, int64_t n) {
    if (rows >= omp_get_max_threads()) {
        #pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < rows; ++r)
            y[r] = row_sum(x + r * n, n);
        return;
    }
    // Few, long rows: split each row's blocks across the threads instead.
    const int64_t nblocks = (n + BLOCK - 1) / BLOCK;
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        double total = 0.0;
        #pragma omp parallel for schedule(static) reduction(+ : total)
        for (int64_t b = 0; b < nblocks; ++b) {
            const int64_t j = b * BLOCK;
            total += block_sum(xr + j, (n - j < BLOCK) ? n - j : BLOCK);
        }
        y[r] = (float)total;
    }
}
"""

_lib = compile_cpp(CPP_SOURCE, name="sum_rows_cpp")
_lib.sum_rows_f32.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
_lib.sum_rows_f32.restype = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            raise TypeError(f"sum_rows_cpp supports float32 only, got {x.dtype}")
        if x.device.type != "cpu":
            raise ValueError("sum_rows_cpp runs on CPU tensors")
        x = x.contiguous()
        out_shape = x.shape[:-1]
        y = torch.empty(out_shape, dtype=torch.float32)
        rows = math.prod(out_shape)
        n = x.shape[-1] if x.dim() > 0 else 1
        if rows > 0:
            _lib.sum_rows_f32(ptr(x), ptr(y), rows, n)
        return y
