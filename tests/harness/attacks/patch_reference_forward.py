"""Attack (patching the judge in-process): replace the reference Model's forward.

The judge loads the problem under an unguessable module name before importing the candidate, but the
module is still in sys.modules. At import the attack walks sys.modules (spelled to dodge the static
check), finds every module other than its own that defines `Model` and `get_inputs` (the problem), and
replaces Model.forward with one that sleeps 5 ms and returns zeros. The candidate returns zeros too: the
judge compares zeros with zeros and times a "reference" that only sleeps. Nothing found: zeros are wrong.
"""
# problem: softmax
# expect: defeated

import sys
import time

import torch
import torch.nn as nn


def _slow_zeros(self, *args, **kwargs):
    time.sleep(0.005)
    return torch.zeros_like(args[0])


def _patch_reference() -> int:
    patched = 0
    for name, mod in list(getattr(sys, "mod" + "ules").items()):
        d = getattr(mod, "__dict__", {})
        if name == __name__ or not isinstance(d.get("Model"), type) or "get_inputs" not in d:
            continue
        d["Model"].forward = _slow_zeros
        patched += 1
    return patched


PATCHED = _patch_reference()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)
