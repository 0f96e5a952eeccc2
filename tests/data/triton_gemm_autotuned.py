"""A hand-written, autotuned Triton fp16 GEMM, for the tests of compiling for the target's architecture: its
configs are alternatives (the GPU's autotuner skips one that cannot launch). CONFIGS is a module constant so
that a test can write a variant whose configs all need too much shared memory."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

CONFIGS = [(256, 256, 256), (64, 64, 32)]  # BM, BN, BK: the first cannot launch on an H100 (768 KiB)


@triton.autotune(
    configs=[triton.Config({"BM": m, "BN": n, "BK": k}, num_warps=4, num_stages=3) for m, n, k in CONFIGS],
    key=["M", "N", "K"],
)
@triton.jit
def gemm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        a = tl.load(
            a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (kk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(kk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a, b, acc)
    c = acc.to(tl.float16)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def forward(self, a, b):
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), dtype=torch.float16, device=a.device)

        def grid(meta):
            return (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))

        strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        gemm_kernel[grid](a, b, c, M, N, K, *strides)
        return c
