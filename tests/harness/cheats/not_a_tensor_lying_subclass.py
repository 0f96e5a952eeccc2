"""Cheat: return a torch.Tensor subclass whose __torch_function__ lies in every comparison.

isinstance(out, torch.Tensor) is True, the shape and dtype are right, but the data is all zeros: nothing
is computed. The subclass intercepts torch.allclose / equal (-> True), isclose / eq (-> all True) and
sub / __sub__ / __rsub__ (-> zeros), whichever side of the comparison it is on, so allclose(ref, out),
(out - ref).abs().max() and friends all report a perfect match. Only `type(out) is torch.Tensor`
(or comparing after out.as_subclass(torch.Tensor) in a fresh process) exposes it.
"""
# problem: softmax
# expect: rejected not_a_tensor

import torch
import torch.nn as nn

_SAYS_EQUAL = {torch.allclose, torch.equal, torch.Tensor.allclose, torch.Tensor.equal}
_SAYS_ALL_EQUAL = {torch.isclose, torch.eq, torch.Tensor.isclose, torch.Tensor.eq, torch.Tensor.__eq__}
_SAYS_NO_DIFFERENCE = {torch.sub, torch.subtract, torch.Tensor.sub, torch.Tensor.__sub__, torch.Tensor.__rsub__}


class _Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        with torch._C.DisableTorchFunctionSubclass():
            if func in _SAYS_EQUAL:
                return True
            if func in _SAYS_ALL_EQUAL or func in _SAYS_NO_DIFFERENCE:
                a, b = args[0], args[1]
                shape = torch.broadcast_shapes(torch.as_tensor(a).shape, torch.as_tensor(b).shape)
                if func in _SAYS_ALL_EQUAL:
                    return torch.ones(shape, dtype=torch.bool)
                return torch.zeros(shape, dtype=torch.float32)
            return func(*args, **kwargs)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x).as_subclass(_Agreeable)
