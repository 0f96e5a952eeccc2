"""
Row softmax in C++ (OpenMP + AVX2/FMA), fp32
=============================================

Computes ``softmax(x, dim=-1)`` for a float32 tensor of any shape, seen as ``rows x n`` with ``n`` the last
dimension.

Algorithm
---------
The textbook softmax reads each row three times (max; ``sum(exp(x - max))``; ``exp(x - max) / sum``), and
the usual "online" softmax (running max ``m`` and running sum, the sum rescaled by ``exp(m_old - m_new)``
whenever the max grows) reads it twice but evaluates ``exp`` twice per element. This kernel is online and
evaluates ``exp`` once per element:

* ``exp(x) = p(r) * 2^k`` with ``k = round(x * log2 e)`` and ``r = x - k ln2`` (the range reduction every
  ``expf`` does). The kernel keeps the two factors apart, and its running "max" is the largest exponent
  ``K`` seen so far, per SIMD lane. A term is stored as ``p(r) * 2^(k - K)`` (at most ~1.5, so nothing
  overflows and no ``x - max`` subtraction is needed).
* **Pass 1 (online)**, blocks of 32 values (4 AVX vectors): compute ``p`` and ``k`` for the block, raise
  ``K`` to the block's largest ``k``, rescale the running sum by ``2^(K_old - K_new)``, write the terms to
  the output and add them to the sum, remember the block's ``K`` (8 ints per block, thread-local scratch).
  Rescaling by a power of two is an integer add into the float's exponent field: no ``exp`` call.
* **Lane merge**: ``K_row = max_lanes K``, ``S = sum_lanes s * 2^(K_lane - K_row)``.
* **Pass 2 (normalise)**: ``y *= 2^(K_block - K_row) / S``, one factor per block and lane; the row (4 KiB
  for n = 1024) is still in L1 from pass 1, so this is one multiply per vector.

Why it is fast
--------------
* One ``exp`` per element, with no libm call: Cody-Waite reduction with FMA plus Cephes' degree-5
  polynomial, about 1 ulp, ~13 vector instructions per 8 values; the power-of-two bookkeeping runs on the
  integer pipes.
* Two passes, the second from L1: the row comes from memory once.
* Rows are independent: ``#pragma omp parallel for`` over rows, no synchronisation.
* The row tail (n not a multiple of 32) goes through the same code with masked loads whose dead lanes hold
  ``-inf`` and masked stores. A ``-inf`` value has the exponent of the clamp (``-1.44e7``), so once
  scaled to the row's exponent its contribution is exactly 0.

Numerics: max relative error ~4e-6 against ``torch.softmax``. Inputs are clamped to ``[-1e7, 1e7]`` so the
exponents fit int32: values at or below ``-1e7`` behave as ``-inf`` (term 0), a row that is all ``-inf`` or
holds a value at or above ``1e7`` (``+inf``) gives NaN, and NaN propagates to its row, all as in
``torch.softmax``.
"""

import ctypes

import torch
import torch.nn as nn

from agentkern.native import compile_cpp, ptr

CPP_SOURCE = r"""
#include <immintrin.h>
#include <cstdint>
#include <vector>

// exp(x) = p(r) * 2^n with n = round(x * log2(e)) and r = x - n*ln2 in [-ln2/2, ln2/2]. The kernel keeps
// the two factors apart: p(r) (a float in [0.7, 1.5]) and n (an int32), so the caller chooses the power of
// two the term is expressed in. Cody-Waite reduction with FMA (ln2 split in a float and its remainder)
// keeps r accurate to ~1 ulp for |x| up to the clamp below; the polynomial is Cephes' expf (about 1 ulp).
struct ExpParts { __m256 p; __m256i n; };

static inline ExpParts exp_parts(__m256 x) {
    // Clamp keeps n inside int32 arithmetic (|n| <= 1.45e7); NaN passes through (max/min return their
    // second operand). Values <= -1e7, -inf included, act as -inf: relative to any real row max their
    // exponent is < -127 below it, so pow2i() zeroes their contribution exactly. Values >= 1e7
    // act as +inf: the row becomes NaN, as torch.softmax makes it (inf - inf).
    x = _mm256_max_ps(_mm256_set1_ps(-1.0e7f), x);
    x = _mm256_min_ps(_mm256_set1_ps(1.0e7f), x);
    const __m256 nf = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(0.693147182464599609375f), x);
    r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(-1.904654323148236e-09f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    return {p, _mm256_cvtps_epi32(nf)};
}

// 2^d for integer d <= 0, built directly in the exponent field; d <= -127 gives exactly 0.0f.
static inline __m256 pow2i(__m256i d) {
    d = _mm256_max_epi32(d, _mm256_set1_epi32(-127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(d, _mm256_set1_epi32(127)), 23));
}

static inline int hmax_epi32(__m256i v) {
    __m128i m = _mm_max_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(m);
}

static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Lanes [0, rem) active (rem may be <= 0: no lane, or >= 8: all lanes).
static inline __m256i lane_mask(int64_t rem) {
    const int r = rem < 0 ? 0 : (rem > 8 ? 8 : (int)rem);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

constexpr int KINF = 14426950;  // n of the clamps, round(1e7 * log2(e))
constexpr int64_t BLK = 32;  // 4 vectors share one running-max update and one stored exponent

// One row. kblk holds ceil(n / BLK) vectors of per-lane block exponents.
static void softmax_row(const float* __restrict x, float* __restrict y, int64_t n, int32_t* __restrict kblk) {
    __m256i K = _mm256_set1_epi32(-(1 << 28));  // running max exponent per lane ("-inf")
    __m256 s = _mm256_setzero_ps();             // running sum per lane, in units of 2^K
    const int64_t nfull = n / BLK * BLK;
    int64_t b = 0;

    // Pass 1 (online): terms p * 2^(n - Kblk) go to y; the sum is rescaled when K grows.
    auto block = [&](__m256 x0, __m256 x1, __m256 x2, __m256 x3, float* yb, __m256i m0, __m256i m1,
                     __m256i m2, __m256i m3, bool masked) {
        ExpParts e0 = exp_parts(x0), e1 = exp_parts(x1), e2 = exp_parts(x2), e3 = exp_parts(x3);
        __m256i kn = _mm256_max_epi32(_mm256_max_epi32(e0.n, e1.n), _mm256_max_epi32(e2.n, e3.n));
        kn = _mm256_max_epi32(K, kn);
        s = _mm256_mul_ps(s, pow2i(_mm256_sub_epi32(K, kn)));
        K = kn;
        __m256 t0 = _mm256_mul_ps(e0.p, pow2i(_mm256_sub_epi32(e0.n, kn)));
        __m256 t1 = _mm256_mul_ps(e1.p, pow2i(_mm256_sub_epi32(e1.n, kn)));
        __m256 t2 = _mm256_mul_ps(e2.p, pow2i(_mm256_sub_epi32(e2.n, kn)));
        __m256 t3 = _mm256_mul_ps(e3.p, pow2i(_mm256_sub_epi32(e3.n, kn)));
        s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(t0, t1), _mm256_add_ps(t2, t3)));
        if (!masked) {
            _mm256_storeu_ps(yb, t0); _mm256_storeu_ps(yb + 8, t1);
            _mm256_storeu_ps(yb + 16, t2); _mm256_storeu_ps(yb + 24, t3);
        } else {
            _mm256_maskstore_ps(yb, m0, t0); _mm256_maskstore_ps(yb + 8, m1, t1);
            _mm256_maskstore_ps(yb + 16, m2, t2); _mm256_maskstore_ps(yb + 24, m3, t3);
        }
        _mm256_storeu_si256((__m256i*)(kblk + 8 * b), kn);
        ++b;
    };
    const __m256i all = _mm256_set1_epi32(-1);
    for (int64_t j = 0; j < nfull; j += BLK)
        block(_mm256_loadu_ps(x + j), _mm256_loadu_ps(x + j + 8), _mm256_loadu_ps(x + j + 16),
              _mm256_loadu_ps(x + j + 24), y + j, all, all, all, all, false);
    const int64_t rem = n - nfull;
    __m256i m0 = lane_mask(rem), m1 = lane_mask(rem - 8), m2 = lane_mask(rem - 16), m3 = lane_mask(rem - 24);
    if (rem > 0) {
        // Dead lanes read as -inf (never stored; their share of the sum vanishes at the lane merge).
        const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
        const float* xt = x + nfull;
        block(_mm256_blendv_ps(ninf, _mm256_maskload_ps(xt, m0), _mm256_castsi256_ps(m0)),
              _mm256_blendv_ps(ninf, _mm256_maskload_ps(xt + 8, m1), _mm256_castsi256_ps(m1)),
              _mm256_blendv_ps(ninf, _mm256_maskload_ps(xt + 16, m2), _mm256_castsi256_ps(m2)),
              _mm256_blendv_ps(ninf, _mm256_maskload_ps(xt + 24, m3), _mm256_castsi256_ps(m3)),
              y + nfull, m0, m1, m2, m3, true);
    }

    // Merge lanes: Krow = max_l K_l, S = sum_l s_l * 2^(K_l - Krow).
    const int kmax = hmax_epi32(K);
    const __m256i krow = _mm256_set1_epi32(kmax);
    const float total = hsum256(_mm256_mul_ps(s, pow2i(_mm256_sub_epi32(K, krow))));
    // A row that is entirely -inf, or holds +inf, has no finite max: NaN, as torch.softmax gives.
    const bool no_finite_max = kmax <= -KINF || kmax >= KINF;
    const __m256 inv = _mm256_set1_ps(no_finite_max ? __builtin_nanf("") : 1.0f / total);

    // Pass 2: y *= 2^(Kblk - Krow) / S, one factor per block and lane (y is still in L1).
    for (int64_t j = 0, bb = 0; j < nfull; j += BLK, ++bb) {
        const __m256 f = _mm256_mul_ps(inv, pow2i(_mm256_sub_epi32(
            _mm256_loadu_si256((const __m256i*)(kblk + 8 * bb)), krow)));
        _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_loadu_ps(y + j), f));
        _mm256_storeu_ps(y + j + 8, _mm256_mul_ps(_mm256_loadu_ps(y + j + 8), f));
        _mm256_storeu_ps(y + j + 16, _mm256_mul_ps(_mm256_loadu_ps(y + j + 16), f));
        _mm256_storeu_ps(y + j + 24, _mm256_mul_ps(_mm256_loadu_ps(y + j + 24), f));
    }
    if (rem > 0) {
        const __m256 f = _mm256_mul_ps(inv, pow2i(_mm256_sub_epi32(
            _mm256_loadu_si256((const __m256i*)(kblk + 8 * (b - 1))), krow)));
        float* yt = y + nfull;
        _mm256_maskstore_ps(yt, m0, _mm256_mul_ps(_mm256_maskload_ps(yt, m0), f));
        _mm256_maskstore_ps(yt + 8, m1, _mm256_mul_ps(_mm256_maskload_ps(yt + 8, m1), f));
        _mm256_maskstore_ps(yt + 16, m2, _mm256_mul_ps(_mm256_maskload_ps(yt + 16, m2), f));
        _mm256_maskstore_ps(yt + 24, m3, _mm256_mul_ps(_mm256_maskload_ps(yt + 24, m3), f));
    }
}

extern "C" void softmax_rows_f32(const float* x, float* y, int64_t rows, int64_t n) {
    const int64_t nblk = (n + BLK - 1) / BLK;
    #pragma omp parallel
    {
        std::vector<int32_t> kblk(8 * nblk);  // per-thread scratch: block exponents of the current row
        #pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r)
            softmax_row(x + r * n, y + r * n, n, kblk.data());
    }
}
"""

_lib = compile_cpp(CPP_SOURCE, name="softmax_cpp")
_lib.softmax_rows_f32.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
_lib.softmax_rows_f32.restype = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            raise TypeError(f"softmax_cpp supports float32 only, got {x.dtype}")
        if x.device.type != "cpu":
            raise ValueError("softmax_cpp runs on CPU tensors")
        x = x.contiguous()
        y = torch.empty_like(x, memory_format=torch.contiguous_format)
        if x.numel() == 0:
            return y
        n = x.shape[-1] if x.dim() > 0 else 1
        _lib.softmax_rows_f32(ptr(x), ptr(y), x.numel() // n, n)
        return y
