"""This CPU's float32 compute peak, measured: independent fused multiply-adds on every core, nothing else.

The peak the roofline check holds kernels to must never be beaten by an honest one. Derived from /proc it is
the cores times the clock the VM admits to (often the base clock, far below the turbo the cores run at)
times the lanes and pipes assumed for the ISA; measured through BLAS it is what that BLAS reaches (about
half the machine on some CPUs). A well-blocked GEMM beat both on a 2-core AVX-512 EPYC (465 GFLOP/s against
a derived 332 and a numpy 279; this loop: 480-510). No kernel can do more floating-point work than the FMA units can, so a
loop of FMAs on independent registers, timed with all cores at once, is an upper bound a GEMM cannot pass.
"""

from __future__ import annotations

import ctypes
import time

# Independent accumulators per thread: at least latency x pipes (4 x 2) FMAs in flight, and all of them in
# registers (16 ymm on AVX2, 32 zmm on AVX-512: 12 and 24 leave room for the two constant operands).
SOURCE = r"""
#include <immintrin.h>
#include <omp.h>

#if defined(__AVX512F__)
typedef __m512 vec;
#define ACC 24
#define LANES 16
static inline vec set1(float v) { return _mm512_set1_ps(v); }
static inline vec fma_(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
static inline float lane0(vec v) { return _mm512_cvtss_f32(v); }
#elif defined(__FMA__)
typedef __m256 vec;
#define ACC 12
#define LANES 8
static inline vec set1(float v) { return _mm256_set1_ps(v); }
static inline vec fma_(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
static inline float lane0(vec v) { return _mm256_cvtss_f32(v); }
#else
#define NO_FMA 1
#endif

extern "C" int fma_lanes() {
#ifdef NO_FMA
  return 0;
#else
  return LANES;
#endif
}

// iters rounds of ACC FMAs (LANES wide) on each of `threads` threads; the number of FMAs per thread and
// round is ACC, which the caller multiplies out. The result keeps the work from being optimised away.
extern "C" float fma_loop(long iters, int threads) {
#ifdef NO_FMA
  return 0.0f;
#else
  float sink = 0.0f;
  #pragma omp parallel num_threads(threads) reduction(+ : sink)
  {
    const vec m = set1(0.999999f), a = set1(1e-7f * (1 + omp_get_thread_num()));
    vec acc[ACC];
    for (int j = 0; j < ACC; ++j) acc[j] = set1(1.0f + j);
    for (long i = 0; i < iters; ++i) {
      #pragma GCC unroll 24
      for (int j = 0; j < ACC; ++j) acc[j] = fma_(acc[j], m, a);
    }
    for (int j = 0; j < ACC; ++j) sink += lane0(acc[j]);
  }
  return sink;
#endif
}

extern "C" int fma_accumulators() {
#ifdef NO_FMA
  return 0;
#else
  return ACC;
#endif
}
"""

TARGET_S = 0.03  # one timed run: long enough for the clock to settle, short beside the other measurements


def measure_tflops(cores: int, trials: int = 4) -> float:
    """float32 TFLOP/s of FMAs on `cores` threads at once, the best of `trials` timed runs; 0.0 when there is
    no C++ compiler or no FMA unit this code knows (the other estimates of the peak stand alone then)."""
    from agentkern.native import CompileError

    try:
        lib = compile_loop()
    except (CompileError, OSError):
        return 0.0
    lib.fma_loop.argtypes = [ctypes.c_long, ctypes.c_int]
    lib.fma_loop.restype = ctypes.c_float
    lanes, accumulators = lib.fma_lanes(), lib.fma_accumulators()
    if not lanes:
        return 0.0
    iters = 100_000
    lib.fma_loop(iters, cores)  # threads started, clocks up
    while True:  # sized so that one run takes about TARGET_S
        start = time.perf_counter()
        lib.fma_loop(iters, cores)
        took = time.perf_counter() - start
        if took >= TARGET_S / 4:
            iters = max(iters, int(iters * TARGET_S / took))
            break
        iters *= 4
    best = float("inf")
    for _ in range(trials):
        start = time.perf_counter()
        lib.fma_loop(iters, cores)
        best = min(best, time.perf_counter() - start)
    flops = 2.0 * lanes * accumulators * iters * cores
    return flops / best / 1e12


def compile_loop() -> ctypes.CDLL:
    """The FMA loop, built for this host (-march=native) and cached like any C++ build (native.py)."""
    from agentkern.native import compile_cpp

    return compile_cpp(SOURCE, "fma_peak", extra_flags=("-O2",))
