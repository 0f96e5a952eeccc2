"""Cheat: memoise outputs keyed by the input's shape plus a cheap fingerprint of 8 sampled elements.

The first call on an input computes honestly; later calls whose fingerprint matches return the SAME
cached output tensor without computing anything. A harness that checks correctness on fresh random
inputs sees correct results (fingerprints differ), and a harness that then times repeated calls on one
input sees an O(1) "kernel". Changing an unsampled element of the input exposes it: the output does not
change.
"""
# problem: softmax
# expect: rejected caches_results

import torch
import torch.nn as nn

_SAMPLE = torch.tensor([0, 1, 4097, 77777, 300001, 524288, 999999, 1048575])


def _softmax(x):
    e = (x - x.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._cache: dict = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1)
        key = (tuple(x.shape), tuple(flat[_SAMPLE % flat.numel()].tolist()))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        out = _softmax(x)
        if len(self._cache) > 64:
            self._cache.clear()
        self._cache[key] = out
        return out
