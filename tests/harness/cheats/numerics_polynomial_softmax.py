"""Cheat: a softmax whose exp is a degree-5 Taylor polynomial, good only over the range of the test inputs.

exp(z) for z = x - rowmax <= 0 is taken as p(z/8)^8, p the Taylor polynomial of degree 5 (three squarings,
no range reduction, no exp at all). On the problem's randn logits z stays above about -8, z/8 above -1,
where p is accurate to a few 1e-4: every output is within atol=rtol=1e-4 of torch.softmax, and a harness
that only ever feeds randn calls it correct (and fast: five fused multiply-adds per element). At 4x the
scale z/8 reaches -3, where p turns negative and p^8 explodes: a few far-below-max logits take over their
row (max abs diff near 1, about 7% of all outputs beyond tolerance).
Judged on the scale_4 trial: incorrect, with no speedup.
"""
# problem: softmax
# expect: incorrect

import torch
import torch.nn as nn

_INV_FACTORIAL = (1.0, 1.0, 1 / 2, 1 / 6, 1 / 24, 1 / 120)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = (x - x.amax(dim=-1, keepdim=True)) * 0.125
        p = torch.full_like(w, _INV_FACTORIAL[-1])
        for c in reversed(_INV_FACTORIAL[:-1]):  # Horner
            p = p * w + c
        for _ in range(3):  # p(z/8)^8 ~ exp(z)
            p = p * p
        return p / p.sum(dim=-1, keepdim=True)
