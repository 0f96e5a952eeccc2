"""The correctness trials' inputs: what each trial feeds the reference and the candidate, and why.

Every trial starts from a fresh `get_inputs()` draw under its own seed. Then:
- trials 1-3 reuse trial 0's buffers (same pointer, shape and version counter) to expose caches: trials 1
  and 3 swap two pairs of random elements, trial 2 refills the buffers completely (reuse_buffers);
- from trial 4 on, the floating inputs of the fresh draw are transformed (TRANSFORMS), so a kernel whose
  numerics only hold on the problem's own distribution fails: a polynomial exp that is accurate on small
  logits is far off at 4x the scale, one that flushes small values shows at 1/8 of it, a max-free softmax
  overflows on an outlier. The cycle ends with one plain fresh draw and then repeats.
Integer and bool tensors (indices, masks, labels) and non-tensor arguments are never changed: their values
carry meaning a transform would destroy. So are float tensors that only hold 0 and 1 (float masks).

Pure functions of their arguments and a torch.Generator, so a trial's inputs depend only on its seed.
"""

from __future__ import annotations

import math

import torch

FRESH = "fresh"
# The order the transforms run in from trial 4 on; None is a plain fresh draw, closing each cycle.
TRANSFORMS = ("scale_4", "scale_0.125", "rand", "outliers")
_CYCLE = (*TRANSFORMS, None)
FIRST_TRANSFORMED_TRIAL = 4
# Trials that reuse trial 0's buffers, and how.
REUSE = {1: "swap", 2: "refill", 3: "swap"}
SWAPPED_PAIRS = 2
OUTLIERS = 4  # elements per tensor set to +-OUTLIER_FACTOR x its largest magnitude
OUTLIER_FACTOR = 8.0


def trials_for_every_transform() -> int:
    """The fewest trials in which every transform runs once (EvalOptions.trials defaults to this)."""
    return FIRST_TRANSFORMED_TRIAL + len(_CYCLE)


def transform_for(trial: int) -> str | None:
    """The transform trial `trial` applies to its fresh draw; None for a plain draw (or a reuse trial)."""
    if trial < FIRST_TRANSFORMED_TRIAL:
        return None
    return _CYCLE[(trial - FIRST_TRANSFORMED_TRIAL) % len(_CYCLE)]


def label(trial: int, name: str | None = None, notes: list[str] | None = None) -> str:
    """What a trial's inputs were, for details["trial_inputs"]."""
    if trial in REUSE:
        how = f"{SWAPPED_PAIRS} pairs swapped" if REUSE[trial] == "swap" else "refilled"
        text = f"{FRESH} (trial 0's buffers, {how})"
    else:
        text = name or FRESH
    return f"{text} ({'; '.join(notes)})" if notes else text


def skip_reason(x: torch.Tensor) -> str | None:
    """Why a floating tensor must not be transformed, or None. Non-floating tensors are never passed here."""
    if x.numel() == 0:
        return "empty"
    finite = x[torch.isfinite(x)]
    if finite.numel() and bool(((finite == 0) | (finite == 1)).all()):
        # A 0/1 mask scaled by 4 is no longer a mask; the reference would compute something else entirely.
        return "mask-like (only 0 and 1)"
    return None


def apply(name: str, inputs: list, generator: torch.Generator) -> tuple[list, list[str]]:
    """`inputs` with transform `name` applied to each floating tensor (new tensors; `inputs` is untouched),
    and a note for each floating input left as drawn."""
    fn = _FUNCTIONS[name]
    out, notes = [], []
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            out.append(x)
            continue
        reason = skip_reason(x)
        if reason:
            notes.append(f"input {i} left as drawn: {reason}")
            out.append(x)
            continue
        y = fn(x, generator)
        if y.stride() != x.stride():
            # Same layout as drawn: a problem that hands over a transposed view keeps doing so.
            y = torch.empty_like(x).copy_(y)
        out.append(y)
    return out, notes


def _scaled(factor: float):
    # Powers of two: the scaled values are exact, so the transform itself adds no rounding.
    return lambda x, _gen: x * factor


def _uniform(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Uniform values with the draw's spread: [-a, a) with the draw's standard deviation when it has both
    signs, [0, max) when it is non-negative (a non-negative input, e.g. a variance, stays in its domain)."""
    xf = x.detach().float()
    u = torch.rand(x.shape, generator=gen)
    if bool((xf >= 0).all()):
        hi = float(xf.max()) or 1.0
        values = u * hi
    else:
        a = math.sqrt(3.0) * (float(xf.std()) if x.numel() > 1 else float(xf.abs().max())) or 1.0
        values = (u * 2 - 1) * a
    return values.to(dtype=x.dtype, device=x.device)


def _outliers(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A few elements set to +-8x the draw's largest magnitude (a spike in the logits, an activation
    outlier); the rest as drawn."""
    flat = x.detach().contiguous().view(-1).clone()
    k = min(OUTLIERS, flat.numel())
    peak = float(x.detach().abs().float().max()) or 1.0
    value = min(OUTLIER_FACTOR * peak, torch.finfo(x.dtype).max / 2)
    idx = torch.randperm(flat.numel(), generator=gen)[:k]
    signs = torch.randint(0, 2, (k,), generator=gen).float() * 2 - 1
    flat[idx.to(flat.device)] = (signs * value).to(dtype=x.dtype, device=x.device)
    return flat.view(x.shape)


_FUNCTIONS = {"scale_4": _scaled(4.0), "scale_0.125": _scaled(0.125), "rand": _uniform, "outliers": _outliers}
assert set(_FUNCTIONS) == set(TRANSFORMS)


def reuse_buffers(trial: int, first: list, fresh: list, generator: torch.Generator) -> list:
    """Trials 1-3: trial 0's buffers with new contents, written through `.data` (same pointer, shape and
    version counter, so nothing but the contents tells the candidate its input changed). Trials 1 and 3
    swap two pairs of random elements: a cache keyed on pointer, shape or a sample of the input, even one
    that spot-checks a few outputs, returns the old answer; two probes, so a spot check that happens to see
    a swapped element once is still caught. Trial 2 refills the buffers with the fresh draw."""
    for dst, src in zip(first, fresh):
        if not isinstance(dst, torch.Tensor):
            continue
        if REUSE[trial] == "refill":
            dst.data.copy_(src)
        elif dst.is_contiguous() and dst.numel() >= 2 * SWAPPED_PAIRS:
            flat = dst.data.view(-1)
            idx = torch.randperm(flat.numel(), generator=generator)[: 2 * SWAPPED_PAIRS].to(flat.device)
            left, right = idx[:SWAPPED_PAIRS], idx[SWAPPED_PAIRS:]
            flat[left], flat[right] = flat[right].clone(), flat[left].clone()
    return first
