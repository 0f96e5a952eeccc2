"""
LayerNorm over the last dimension in C++ (OpenMP + AVX2/FMA), fp32
===================================================================

Computes ``y = (x - mean) / sqrt(var + eps) * weight + bias`` per row of ``n = dim`` values (biased
variance, as ``nn.LayerNorm``), for a float32 input of shape ``(..., dim)``. The module owns an
``nn.LayerNorm(dim)`` built and initialised exactly as the reference's, so both hold the same parameters
under the same seed; the kernel reads its ``weight``, ``bias`` and ``eps``.

Algorithm
---------
Per row, three passes, all but the first from L1 (a 1024-float row is 4 KiB):

1. ``mean``: sum of ``x - x[0]`` (shifted data, so the partial sums stay small) with eight independent
   AVX accumulators, merged pairwise; blocks of 2048 values are added in double.
2. ``var = mean((x - mean)^2)``: the same reduction on the centred values (one FMA per vector). This
   two-pass form never suffers the cancellation of ``E[x^2] - E[x]^2``. The mean is kept as a float
   pair ``hi + lo`` and rows are centred as ``(x - hi) - lo``, so rows whose mean is large against their
   spread (``1000 + 0.01 * randn``) keep full precision.
3. ``y = (x - mean) * (rstd * w) + b``: subtract, multiply, FMA, with ``w`` and ``b`` streamed from L1/L2
   (they are shared by all rows and stay cached).

Rows are independent and shared among the cores with ``#pragma omp parallel for``.

Why it is fast
--------------
The row comes from memory once and goes back once; the two extra passes hit L1, and each is a handful of
vector instructions per 8 values. Multiple accumulators hide the FP add latency, so both reductions run
at L1 load bandwidth. The affine step is fused into the normalisation (no temporary tensor).
"""

import ctypes

import torch
import torch.nn as nn

from agentkern.native import compile_cpp, ptr

CPP_SOURCE = r"""
#include <immintrin.h>
#include <cmath>
#include <cstdint>

constexpr int64_t BLOCK = 2048;  // values per float-accumulated block

static inline __m256i lane_mask(int64_t left) {
    const int r = left <= 0 ? 0 : (left >= 8 ? 8 : (int)left);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// acc = f(acc, x[at .. at + 8)) on the lanes below len; lanes past len keep acc (f is lane-wise).
template <class F>
static inline __m256 step_part(__m256 acc, const float* x, int64_t at, int64_t len, F f) {
    if (len - at >= 8) return f(acc, _mm256_loadu_ps(x + at));
    const __m256i m = lane_mask(len - at);
    return _mm256_blendv_ps(acc, f(acc, _mm256_maskload_ps(x + at, m)), _mm256_castsi256_ps(m));
}

static inline double hsum_pd(__m256 v) {
    __m256d d = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                              _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(d), _mm256_extractf128_pd(d, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}

// Lane-wise reduction of a block (len <= BLOCK): acc = f(acc, v) over its 8-value vectors v.
template <class F>
static inline double block_reduce(const float* __restrict x, int64_t len, F f) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    int64_t i = 0;
    for (; i + 64 <= len; i += 64) {
        a0 = f(a0, _mm256_loadu_ps(x + i));
        a1 = f(a1, _mm256_loadu_ps(x + i + 8));
        a2 = f(a2, _mm256_loadu_ps(x + i + 16));
        a3 = f(a3, _mm256_loadu_ps(x + i + 24));
        a4 = f(a4, _mm256_loadu_ps(x + i + 32));
        a5 = f(a5, _mm256_loadu_ps(x + i + 40));
        a6 = f(a6, _mm256_loadu_ps(x + i + 48));
        a7 = f(a7, _mm256_loadu_ps(x + i + 56));
    }
    if (i < len) {  // fewer than 64 left: (partial) vectors, one per accumulator
        a0 = step_part(a0, x, i, len, f);
        if (i + 8 < len) a1 = step_part(a1, x, i + 8, len, f);
        if (i + 16 < len) a2 = step_part(a2, x, i + 16, len, f);
        if (i + 24 < len) a3 = step_part(a3, x, i + 24, len, f);
        if (i + 32 < len) a4 = step_part(a4, x, i + 32, len, f);
        if (i + 40 < len) a5 = step_part(a5, x, i + 40, len, f);
        if (i + 48 < len) a6 = step_part(a6, x, i + 48, len, f);
        if (i + 56 < len) a7 = step_part(a7, x, i + 56, len, f);
    }
    a0 = _mm256_add_ps(a0, a1); a2 = _mm256_add_ps(a2, a3);
    a4 = _mm256_add_ps(a4, a5); a6 = _mm256_add_ps(a6, a7);
    return hsum_pd(_mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a4, a6)));
}

template <class F>
static inline double row_reduce(const float* __restrict x, int64_t n, F f) {
    double total = 0.0;
    for (int64_t j = 0; j < n; j += BLOCK)
        total += block_reduce(x + j, (n - j < BLOCK) ? n - j : BLOCK, f);
    return total;
}

static void layernorm_row(const float* __restrict x, float* __restrict y, const float* __restrict w,
                          const float* __restrict b, int64_t n, float eps) {
    // Sum of x - x[0] (shifted data): exact subtractions near the pivot, small partial sums.
    const __m256 pivot = _mm256_set1_ps(x[0]);
    const double mean_d = (double)x[0] + row_reduce(x, n, [pivot](__m256 acc, __m256 v) {
        return _mm256_add_ps(acc, _mm256_sub_ps(v, pivot));
    }) / n;
    // The mean as a float pair hi + lo: x - hi is exact (Sterbenz) for values near the mean, so centring
    // as (x - hi) - lo keeps the precision of the double mean when |mean| >> std.
    const float hi = (float)mean_d;
    const __m256 mean_hi = _mm256_set1_ps(hi);
    const __m256 mean_lo = _mm256_set1_ps((float)(mean_d - (double)hi));
    const double var = row_reduce(x, n, [mean_hi, mean_lo](__m256 acc, __m256 v) {
        const __m256 d = _mm256_sub_ps(_mm256_sub_ps(v, mean_hi), mean_lo);
        return _mm256_fmadd_ps(d, d, acc);
    }) / n;
    const float rstd = (float)(1.0 / std::sqrt(var + (double)eps));
    const __m256 vr = _mm256_set1_ps(rstd);

    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m256 s0 = _mm256_mul_ps(_mm256_loadu_ps(w + j), vr);
        __m256 s1 = _mm256_mul_ps(_mm256_loadu_ps(w + j + 8), vr);
        __m256 d0 = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), mean_hi), mean_lo);
        __m256 d1 = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), mean_hi), mean_lo);
        _mm256_storeu_ps(y + j, _mm256_fmadd_ps(d0, s0, _mm256_loadu_ps(b + j)));
        _mm256_storeu_ps(y + j + 8, _mm256_fmadd_ps(d1, s1, _mm256_loadu_ps(b + j + 8)));
    }
    for (; j < n; j += 8) {
        const __m256i m = lane_mask(n - j);
        __m256 s0 = _mm256_mul_ps(_mm256_maskload_ps(w + j, m), vr);
        __m256 d0 = _mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(x + j, m), mean_hi), mean_lo);
        _mm256_maskstore_ps(y + j, m, _mm256_fmadd_ps(d0, s0, _mm256_maskload_ps(b + j, m)));
    }
}

extern "C" void layernorm_f32(const float* x, float* y, const float* w, const float* b, int64_t rows,
                              int64_t n, float eps) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
        layernorm_row(x + r * n, y + r * n, w, b, n, eps);
}
"""

_lib = compile_cpp(CPP_SOURCE, name="layernorm_cpp")
_lib.layernorm_f32.argtypes = [
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_float,
]
_lib.layernorm_f32.restype = None


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        # Same module and same init sequence as the reference: identical parameters under the same seed.
        self.norm = nn.LayerNorm(dim)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            raise TypeError(f"layernorm_cpp supports float32 only, got {x.dtype}")
        if x.device.type != "cpu":
            raise ValueError("layernorm_cpp runs on CPU tensors")
        (dim,) = self.norm.normalized_shape
        if x.dim() == 0 or x.shape[-1] != dim:
            raise ValueError(f"expected last dimension {dim}, got shape {tuple(x.shape)}")
        x = x.contiguous()
        w = self.norm.weight.contiguous()
        b = self.norm.bias.contiguous()
        y = torch.empty_like(x, memory_format=torch.contiguous_format)
        rows = x.numel() // dim if dim > 0 else 0
        if rows > 0:
            _lib.layernorm_f32(ptr(x), ptr(y), ptr(w), ptr(b), rows, dim, self.norm.eps)
        return y
