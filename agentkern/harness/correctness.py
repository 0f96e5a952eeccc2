"""Comparing a candidate's outputs with the reference's, inside the worker.

The comparison functions are bound at import, before any candidate code runs, so a candidate that patches
torch later cannot change how it is judged (and RuntimeSnapshot rejects it for trying).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from agentkern.harness.rejections import Rejected

_isclose, _abs, _sub, _le, _isnan, _count_nonzero = (
    torch.isclose,
    torch.abs,
    torch.sub,
    torch.le,
    torch.isnan,
    torch.count_nonzero,
)
_TENSOR = torch.Tensor

# Bytes the reference's output is overwritten with before it is freed: memory a candidate returns
# without computing shows this pattern.
POISON_BYTE = 0xA5


def as_tensor_list(out, what: str) -> list[torch.Tensor]:
    """A forward's result as a list of tensors; only plain torch.Tensor counts (a subclass can lie)."""
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    for item in items:
        if type(item) is not _TENSOR:
            raise Rejected(
                "not_a_tensor", f"{what} returned {type(item).__module__}.{type(item).__qualname__}, not a torch.Tensor"
            )
    return items


def snapshot(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    return [t.detach().clone() for t in tensors]


def poison(tensors: list[torch.Tensor]) -> None:
    for t in tensors:
        t.untyped_storage().fill_(POISON_BYTE)


def poison_free_blocks(like: list[torch.Tensor], count: int = 4) -> None:
    """Claim the allocator's free blocks of the outputs' size, poison them and give them back.

    The reference's temporaries were freed holding partial answers; after this, the blocks a candidate
    gets for a new output hold the poison instead, whichever of them the allocator picks.
    """
    claimed = [
        torch.empty(t.untyped_storage().nbytes(), dtype=torch.uint8, device=t.device)
        for t in like
        for _ in range(count)
    ]
    for block in claimed:
        block.fill_(POISON_BYTE)
    del claimed


def poisoned_fraction(t: torch.Tensor) -> float:
    if t.numel() == 0:
        return 0.0
    raw = t.detach().contiguous().view(-1).view(torch.uint8)
    return float((raw == POISON_BYTE).float().mean())


def _span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    (a0, a1), (b0, b1) = _span(a), _span(b)
    return a0 < b1 and b0 < a1 and a1 > a0 and b1 > b0


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality: NaN-safe and immune to tolerance games."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(torch.equal(a.contiguous().view(-1).view(torch.uint8), b.contiguous().view(-1).view(torch.uint8)))


@dataclass
class Comparison:
    ok: bool
    reason: str = ""
    max_abs_diff: float | None = None
    mismatch_fraction: float | None = None


def compare(outputs: list[torch.Tensor], expected: list[torch.Tensor], tolerance_for) -> Comparison:
    if len(outputs) != len(expected):
        return Comparison(False, f"returned {len(outputs)} outputs, the reference returns {len(expected)}")
    worst = Comparison(True, max_abs_diff=0.0, mismatch_fraction=0.0)
    for i, (out, exp) in enumerate(zip(outputs, expected)):
        label = f"output {i}" if len(outputs) > 1 else "output"
        if out.shape != exp.shape:
            return Comparison(False, f"{label} has shape {tuple(out.shape)}, expected {tuple(exp.shape)}")
        if out.dtype != exp.dtype:
            return Comparison(False, f"{label} has dtype {out.dtype}, expected {exp.dtype}")
        if out.device != exp.device:
            return Comparison(False, f"{label} is on {out.device}, expected {exp.device}")
        if out.numel() == 0:
            continue
        if not (out.is_floating_point() or out.is_complex()):
            if not same_bits(out, exp):
                return Comparison(False, f"{label} differs (integer/bool output must match exactly)")
            continue
        tol = tolerance_for(exp.dtype)
        # Half types are compared in fp32: enough precision, a fraction of the cost of fp64.
        o, e = out.detach(), exp.detach()
        if o.element_size() < 4:
            o, e = o.float(), e.float()
        # |o - e| <= atol + rtol*|e| in a few fused passes (torch.isclose makes several more). A NaN
        # difference fails the test; where the reference itself has NaN, isclose(equal_nan) decides.
        diff = _abs(_sub(o, e))
        bound = _abs(e).mul_(tol).add_(tol)
        bad = o.numel() - int(_count_nonzero(_le(diff, bound)))
        if bad and bool(_isnan(e).any()):
            bad = o.numel() - int(_count_nonzero(_isclose(o, e, rtol=tol, atol=tol, equal_nan=True)))
        max_diff = float(diff.nan_to_num_(nan=0.0).max())
        if bad:
            frac = bad / out.numel()
            nans = int(_isnan(o).sum()) - int(_isnan(e).sum())
            return Comparison(
                False,
                f"{label} differs from the reference: {bad} of {out.numel()} elements ({frac:.2%}) "
                f"beyond atol=rtol={tol:g}, max abs diff {max_diff:.3g}"
                + (f", {nans} unexpected NaN" if nans > 0 else ""),
                max_abs_diff=max_diff,
                mismatch_fraction=frac,
            )
        worst.max_abs_diff = max(worst.max_abs_diff or 0.0, max_diff)
    return worst
