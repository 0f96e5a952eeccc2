"""Benchmark: how fast each thread's AMX tiles run, block after block: whether this host gives every thread the
same tile throughput, and whether it holds over time.

    python benchmarks/amx_rate.py [--threads 2] [--blocks 12] [--seconds 0.1]

A C program (built here with the system's C compiler, -march=native) runs a loop of bf16 tile products
(`tdpbf16ps`, four accumulators, operands in tile registers: no memory traffic) on every thread at once, in
blocks of the same work, and prints each thread's rate per block in bf16 TFLOP/s. On a 2-vCPU Intel Xeon VM
(2026-12-01) one thread ran at 1.0-2.7 TFLOP/s from one block to the next, and with both busy one took 1.8x the
other's time for the same work for seconds at a time: a GEMM that splits its tiles' work evenly between the
threads waits for the slower one (the matmul template's AMX path hands out chunks instead: amx.h.j2,
gemm_amx_shared). It prints figures; it asserts nothing. Exits 2 where the host has no AMX-BF16.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAM = r"""
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct { uint8_t palette, start, reserved[14]; uint16_t colsb[16]; uint8_t rows[16]; } config_t;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

int main(int argc, char** argv) {
    // AMX state is off until the process asks Linux for it (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA).
    if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) { fprintf(stderr, "Linux refused the AMX tiles\n"); return 2; }
    const int threads = atoi(argv[1]), blocks = atoi(argv[2]);
    const long iters = atol(argv[3]);
    for (int blk = 0; blk < blocks; ++blk) {
        double secs[256] = {0};
        #pragma omp parallel num_threads(threads)
        {
            config_t c;
            memset(&c, 0, sizeof c);
            c.palette = 1;
            for (int t = 0; t < 8; ++t) c.colsb[t] = 64, c.rows[t] = 16;
            _tile_loadconfig(&c);
            static __thread char buf[1024] __attribute__((aligned(64)));
            _tile_loadd(4, buf, 64); _tile_loadd(5, buf, 64); _tile_loadd(6, buf, 64); _tile_loadd(7, buf, 64);
            _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
            #pragma omp barrier
            const double t0 = now();
            for (long i = 0; i < iters; ++i) {
                _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7); _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7);
            }
            _tile_stored(0, buf, 64);
            secs[omp_get_thread_num()] = now() - t0;
            _tile_release();
        }
        printf("%d", blk);
        for (int t = 0; t < threads; ++t) printf(" %.3f", 4.0 * 16 * 16 * 32 * 2 * iters / secs[t] / 1e12);
        printf("\n");
    }
    return 0;
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--blocks", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=0.1, help="about how long a block runs at full rate")
    opts = parser.parse_args()
    if not 1 <= opts.threads <= 256:
        sys.exit("amx_rate: --threads must be 1 to 256")
    flags = Path("/proc/cpuinfo").read_text().split() if Path("/proc/cpuinfo").exists() else []
    if "amx_bf16" not in flags:
        print("amx_rate: this host reports no AMX-BF16 tiles", file=sys.stderr)
        sys.exit(2)
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        sys.exit("amx_rate: no C compiler (gcc or cc) on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        source, binary = Path(tmp) / "amx_rate.c", Path(tmp) / "amx_rate"
        source.write_text(PROGRAM)
        built = subprocess.run(
            [cc, "-O2", "-march=native", "-fopenmp", str(source), "-o", str(binary)], capture_output=True, text=True
        )
        if built.returncode != 0:
            sys.exit(f"amx_rate: the C compiler failed:\n{built.stderr.strip()}")
        # A tile product is 16 x 16 x 32 multiply-adds; about 2.6 TFLOP/s a core at full rate.
        iters = max(1000, int(opts.seconds * 2.6e12 / (4 * 16 * 16 * 32 * 2)))
        run = subprocess.run(
            [str(binary), str(opts.threads), str(opts.blocks), str(iters)], capture_output=True, text=True
        )
        if run.returncode != 0:
            print(f"amx_rate: {run.stderr.strip() or 'the program failed'}", file=sys.stderr)
            sys.exit(run.returncode)
    print(f"bf16 tile products, TFLOP/s per thread, {opts.threads} threads, blocks of {iters} x 4 products a thread")
    print("| block | " + " | ".join(f"thread {t}" for t in range(opts.threads)) + " | slowest / fastest |")
    print("|---|" + "---|" * (opts.threads + 1))
    for line in run.stdout.split("\n"):
        if not line.strip():
            continue
        block, *rates = line.split()
        values = [float(r) for r in rates]
        print(f"| {block} | " + " | ".join(f"{v:.2f}" for v in values) + f" | {min(values) / max(values):.2f} |")


if __name__ == "__main__":
    main()
