"""Comparing a candidate's outputs with the reference's, in the judge (the candidate's process never holds
either the reference's answer or this code's state: harness/session.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from agentkern.harness.rejections import Rejected

_abs, _sub, _le, _isnan, _isfinite, _count_nonzero, _argmax = (
    torch.abs,
    torch.sub,
    torch.le,
    torch.isnan,
    torch.isfinite,
    torch.count_nonzero,
    torch.argmax,
)
_TENSOR = torch.Tensor


def as_tensor_list(out, what: str) -> list[torch.Tensor]:
    """A forward's result as a list of tensors; only plain torch.Tensor counts (a subclass can lie)."""
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    for item in items:
        if type(item) is not _TENSOR:
            raise Rejected(
                "not_a_tensor", f"{what} returned {type(item).__module__}.{type(item).__qualname__}, not a torch.Tensor"
            )
    return items


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
    nearer_exact: int = 0  # positions off the reference's answer but within tolerance of the exact one


def compare(outputs: list[torch.Tensor], expected: list[torch.Tensor], tolerance_for, exact=None) -> Comparison:
    """The candidate's `outputs` against the reference's `expected`, each position within atol = rtol =
    tolerance_for(dtype) of it. With `exact` (the reference's answer in float64, session.py), a position off
    `expected` is right where it is within the same tolerance of the exact answer and both answers are finite:
    a reassociated sum, more accurate than eager's, is not called wrong because eager's own rounding is off."""
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
        # |o - e| <= atol + rtol*|e| in a few fused passes (torch.isclose makes several more). An inf or NaN
        # on either side fails it (a NaN difference), except a finite value where the reference is inf
        # (inf <= inf): an infinite max difference says so. Only then are non-finite positions sorted out.
        diff = _abs(_sub(o, e))
        ok = _le(diff, _abs(e).mul_(tol).add_(tol))
        if int(_count_nonzero(ok)) == o.numel() and math.isfinite(top := float(diff.max())):
            worst.max_abs_diff = max(worst.max_abs_diff or 0.0, top)
            continue
        if exact is not None and i < len(exact):
            near = _nearer_exact(o, e, exact[i], ok, tol)
            if near is not None:
                worst.nearer_exact += int(_count_nonzero(near))
                ok = ok | near
                if int(_count_nonzero(ok)) == o.numel():
                    worst.max_abs_diff = max(worst.max_abs_diff or 0.0, float(diff.masked_fill(near, 0.0).max()))
                    continue
        reason, bad, max_diff = _failures(o, e, ok, diff, tol)
        if not bad:  # every failing position was an inf or NaN the reference has too
            worst.max_abs_diff = max(worst.max_abs_diff or 0.0, max_diff)
            continue
        frac = bad / out.numel()
        return Comparison(
            False,
            f"{label} differs from the reference: {bad} of {out.numel()} elements ({frac:.2%}): {reason}",
            max_abs_diff=max_diff,
            mismatch_fraction=frac,
            nearer_exact=worst.nearer_exact,
        )
    return worst


def _nearer_exact(o: torch.Tensor, e: torch.Tensor, x, ok: torch.Tensor, tol: float) -> torch.Tensor | None:
    """Where `o` is off `e` but within tolerance of the exact answer `x`, both answers finite; None where `x` is
    not a float64 tensor of the output's shape (the exact answer could not be had for it)."""
    if type(x) is not _TENSOR or x.dtype != torch.float64 or x.shape != o.shape:
        return None
    off_exact = _abs(_sub(o.double(), x))
    return ~ok & _le(off_exact, _abs(x).mul(tol).add_(tol)) & _isfinite(e) & _isfinite(x)


def _failures(o: torch.Tensor, e: torch.Tensor, ok: torch.Tensor, diff: torch.Tensor, tol: float):
    """(reason, wrong elements, max abs diff over positions finite on both sides) where `ok` has failures.

    A non-finite value equal to the reference's is right: +inf where it has +inf, -inf where -inf, NaN where
    NaN (a kernel that overflows exactly where the reference does is correct). Every other inf or NaN is
    wrong and named: one where the reference is finite, or a finite value where the reference is not."""
    fin_o, fin_e = _isfinite(o), _isfinite(e)
    nan_o, nan_e = _isnan(o), _isnan(e)
    both_finite = fin_o & fin_e
    ok = (ok & both_finite) | (~fin_e & ((o == e) | (nan_o & nan_e)))
    parts = []
    for where, what in (
        (~fin_o & ~nan_o & fin_e, "inf where the reference is finite"),
        (nan_o & fin_e, "NaN where the reference is finite"),
        (fin_o & ~fin_e, "finite where the reference is inf or NaN"),
        (~fin_o & ~fin_e & ~ok, "an inf or NaN other than the reference's"),
    ):
        n = int(_count_nonzero(where))
        if n:
            parts.append(f"{n} {'position is' if n == 1 else 'positions are'} {what}")
    max_diff = float(diff.masked_fill(~both_finite, 0.0).max())
    beyond = int(_count_nonzero(both_finite & ~ok))
    if beyond:
        parts.append(f"{beyond} beyond atol=rtol={tol:g}, max abs diff {max_diff:.3g}")
    return (
        ", ".join(parts) + _where(o, e, ok, diff.masked_fill(ok, -1.0)),
        o.numel() - int(_count_nonzero(ok)),
        max_diff,
    )


def _where(o: torch.Tensor, e: torch.Tensor, ok: torch.Tensor, wrong_diff: torch.Tensor) -> str:
    """Where it differs, for the one who fixes it: the first wrong element and the worst one (index, value,
    expected). `wrong_diff` is the difference where wrong, -1 where right (NaN where a NaN is wrong)."""
    flat_ok = ok.reshape(-1)
    first = int(_argmax((~flat_ok).to(torch.uint8)))
    worst = int(_argmax(torch.nan_to_num(wrong_diff.reshape(-1), nan=float("inf"))))

    def at(i: int) -> str:
        index = list(torch.unravel_index(torch.tensor(i), o.shape)) if o.dim() else []
        where = "[" + ", ".join(str(int(k)) for k in index) + "]"
        return f"{where} (got {float(o.reshape(-1)[i]):.6g}, expected {float(e.reshape(-1)[i]):.6g})"

    return f"; first at {at(first)}" + ("" if worst == first else f", worst at {at(worst)}")
