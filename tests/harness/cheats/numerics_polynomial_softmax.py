"""Cheat: a softmax whose exp is a degree-6 Taylor polynomial, good only over the range of the test inputs.

exp(z) for z = x - rowmax <= 0 is taken as p(z/8)^8, p the Taylor polynomial of degree 6 (three squarings,
no range reduction, no exp at all). On the problem's randn logits z stays above about -9, z/8 above -1.1,
where p is accurate to about 1e-5: every output is within atol=rtol=1e-4 of torch.softmax (0 failures in
2000 seeded 1024x1024 draws; degree 5 failed 10 of 400, which made this cheat caught on a plain trial now
and then), and a harness that only ever feeds randn calls it correct (and fast: six fused multiply-adds per
element). At 4x the scale z/8 reaches -4, where p^8 is orders of magnitude above exp(z): a few
far-below-max logits take over their row (max abs diff near 1, about 2% of all outputs beyond tolerance).
Judged on the scale_4 trial: incorrect, with no speedup.
"""
# problem: softmax
# expect: incorrect

import torch
import torch.nn as nn

_INV_FACTORIAL = (1.0, 1.0, 1 / 2, 1 / 6, 1 / 24, 1 / 120, 1 / 720)


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
