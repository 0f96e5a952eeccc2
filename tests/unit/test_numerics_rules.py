"""The correctness trials' numerics, without a sandbox: which inputs each trial gets (harness/inputs.py) and
how outputs are compared (harness/correctness.compare): inf equals inf, NaN equals NaN, nothing else
non-finite passes, and atol + rtol*|ref| catches a polynomial softmax at 4x its inputs' scale."""

import importlib.util
import math

import pytest
import torch
from support import ROOT

from agentkern.harness import correctness as C
from agentkern.harness import inputs as I
from agentkern.types import EvalOptions

TOL = {torch.float32: 1e-4, torch.float16: 1e-2}.get


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ---- the plan --------------------------------------------------------------------------------------------
def test_every_transform_runs_once_within_the_default_trials():
    planned = [I.transform_for(t) for t in range(EvalOptions().trials)]
    assert planned[:4] == [None] * 4  # trial 0 and the buffer-reuse trials
    assert sorted(n for n in planned if n) == sorted(I.TRANSFORMS)
    assert EvalOptions().trials == I.trials_for_every_transform()
    # Past the default the cycle repeats, so --trials 20 still probes every transform.
    assert [I.transform_for(t) for t in range(9, 13)] == list(I.TRANSFORMS)


def test_labels_name_each_trials_inputs():
    labels = [I.label(t, I.transform_for(t)) for t in range(9)]
    assert labels[0] == labels[8] == "fresh"
    assert "2 pairs swapped" in labels[1] and "refilled" in labels[2] and "2 pairs swapped" in labels[3]
    assert labels[4:8] == list(I.TRANSFORMS)
    assert I.label(5, "scale_0.125", ["input 1 left as drawn: mask-like"]) == (
        "scale_0.125 (input 1 left as drawn: mask-like)"
    )


# ---- the transforms --------------------------------------------------------------------------------------
def test_scales_are_exact_and_leave_other_inputs_alone():
    x = torch.randn(64, 32, generator=gen())
    idx = torch.randint(0, 10, (5,))
    flags = torch.rand(4) > 0.5
    args = [x, idx, flags, 3, "name", None]
    for name, factor in (("scale_4", 4.0), ("scale_0.125", 0.125)):
        out, notes = I.apply(name, args, gen())
        assert torch.equal(out[0], x * factor) and notes == []
        assert all(a is b for a, b in zip(out[1:], args[1:]))
    assert torch.equal(args[0], x)  # the draw itself is untouched


def test_float_masks_are_not_transformed_and_say_why():
    mask = (torch.rand(8, 8, generator=gen()) > 0.5).float()
    x = torch.randn(8, 8)
    for name in I.TRANSFORMS:
        out, notes = I.apply(name, [x, mask], gen())
        assert out[1] is mask
        assert notes == ["input 1 left as drawn: mask-like (only 0 and 1)"]
        assert not torch.equal(out[0], x)
    assert I.skip_reason(torch.empty(0)) == "empty"
    assert I.skip_reason(torch.tensor([0.0, 1.0, 0.5])) is None


def test_rand_keeps_the_spread_and_the_domain():
    x = torch.randn(256, 256, generator=gen()) * 3
    (u,), _ = I.apply("rand", [x], gen(1))
    assert u.dtype == x.dtype and u.shape == x.shape
    a = math.sqrt(3) * float(x.std())
    assert -a <= float(u.min()) < -0.9 * a and 0.9 * a < float(u.max()) < a
    assert float(u.std()) == pytest.approx(float(x.std()), rel=0.05)
    positive = x.abs() + 0.1  # e.g. a variance: stays non-negative
    (v,), _ = I.apply("rand", [positive], gen(1))
    assert float(v.min()) >= 0 and float(v.max()) <= float(positive.max())


def test_outliers_are_few_and_eight_times_the_peak():
    x = torch.randn(128, 128, generator=gen())
    (y,), _ = I.apply("outliers", [x], gen(2))
    changed = (y != x).nonzero()
    assert 1 <= len(changed) <= I.OUTLIERS
    peak = float(x.abs().max())
    assert y[y != x].abs().allclose(torch.full((len(changed),), 8 * peak))
    half = torch.randn(16, 16, dtype=torch.float16)
    (h,), _ = I.apply("outliers", [half], gen())
    assert torch.isfinite(h).all()


def test_transforms_keep_layout_and_depend_only_on_the_seed():
    x = torch.randn(32, 64, generator=gen()).t()  # a transposed view, as a problem may hand over
    for name in I.TRANSFORMS:
        (a,), _ = I.apply(name, [x], gen(5))
        (b,), _ = I.apply(name, [x], gen(5))
        assert a.stride() == x.stride() and torch.equal(a, b), name


def test_reuse_keeps_the_buffers_and_swaps_two_pairs():
    first = [torch.arange(100.0)]
    ptr = first[0].data_ptr()
    out = I.reuse_buffers(1, first, [torch.zeros(100)], gen())
    assert out[0].data_ptr() == ptr
    assert int((out[0] != torch.arange(100.0)).sum()) == 4  # two pairs swapped
    out = I.reuse_buffers(2, first, [torch.ones(100)], gen())
    assert out[0].data_ptr() == ptr and torch.equal(out[0], torch.ones(100))


# ---- compare: inf and NaN ---------------------------------------------------------------------------------
INF, NAN = math.inf, math.nan
REF = torch.tensor([1.0, INF, -INF, NAN, 2.0])


def test_matching_inf_and_nan_are_equal():
    cmp = C.compare([REF.clone()], [REF], TOL)
    assert cmp.ok and cmp.max_abs_diff == 0.0
    half = REF.half()
    assert C.compare([half.clone()], [half], TOL).ok


@pytest.mark.parametrize(
    "got, reason",
    [
        ([1.0, INF, -INF, NAN, INF], "1 position is inf where the reference is finite"),
        ([NAN, INF, -INF, NAN, 2.0], "1 position is NaN where the reference is finite"),
        # A finite value where the reference is inf: |o - e| = inf <= atol + rtol*inf used to pass.
        ([1.0, 5.0, -INF, NAN, 2.0], "1 position is finite where the reference is inf or NaN"),
        ([1.0, INF, -INF, 0.0, 2.0], "1 position is finite where the reference is inf or NaN"),
        ([1.0, -INF, -INF, NAN, 2.0], "1 position is an inf or NaN other than the reference's"),
        ([1.0, INF, NAN, NAN, 2.0], "1 position is an inf or NaN other than the reference's"),
    ],
)
def test_any_other_inf_or_nan_is_a_named_mismatch(got, reason):
    cmp = C.compare([torch.tensor(got)], [REF], TOL)
    assert not cmp.ok and reason in cmp.reason and "1 of 5 elements" in cmp.reason


def test_mismatches_are_counted_together():
    got = torch.tensor([1.5, INF, INF, NAN, INF])
    cmp = C.compare([got], [REF], TOL)
    assert not cmp.ok
    assert "3 of 5 elements" in cmp.reason
    assert "1 beyond atol=rtol=0.0001, max abs diff 0.5" in cmp.reason
    assert cmp.max_abs_diff == 0.5  # over the positions finite on both sides


def test_finite_tolerance_is_atol_plus_rtol_times_the_reference():
    ref = torch.tensor([0.0, 1000.0])
    assert C.compare([torch.tensor([0.99e-4, 1000.0 + 0.99e-4 + 0.099])], [ref], TOL).ok
    assert not C.compare([torch.tensor([1.1e-4, 1000.0])], [ref], TOL).ok
    assert not C.compare([torch.tensor([0.0, 1000.0 + 1e-4 + 0.11])], [ref], TOL).ok


# ---- the polynomial softmax: wrong only at scale ---------------------------------------------------------
def _polynomial_softmax():
    path = ROOT / "tests" / "harness" / "cheats" / "numerics_polynomial_softmax.py"
    spec = importlib.util.spec_from_file_location("numerics_polynomial_softmax", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ModelNew()


def test_polynomial_softmax_passes_plain_randn_and_fails_at_scale_4():
    cheat = _polynomial_softmax()
    x = torch.randn(1024, 1024, generator=gen(42))
    assert C.compare([cheat(x)], [torch.softmax(x, -1)], TOL).ok  # why the plain trials never caught it
    (big,), _ = I.apply("scale_4", [x], gen())
    cmp = C.compare([cheat(big)], [torch.softmax(big, -1)], TOL)
    assert not cmp.ok and cmp.mismatch_fraction > 0.01 and cmp.max_abs_diff > 0.5, cmp.reason


def test_an_honest_softmax_passes_every_transform():
    def honest(x):  # another summation order and precision than torch.softmax's
        z = (x.double() - x.double().amax(-1, keepdim=True)).exp()
        return (z / z.sum(-1, keepdim=True)).float()

    x = torch.randn(512, 1024, generator=gen(3))
    for name in I.TRANSFORMS:
        (t,), _ = I.apply(name, [x], gen(4))
        assert C.compare([honest(t)], [torch.softmax(t, -1)], TOL).ok, name


def test_a_mismatch_says_where_first_and_worst():
    ref = torch.zeros(4, 5)
    out = ref.clone()
    out[1, 2], out[3, 4] = 0.5, 2.0
    cmp = C.compare([out], [ref], TOL)
    assert cmp.reason.endswith("; first at [1, 2] (got 0.5, expected 0), worst at [3, 4] (got 2, expected 0)")


# ---- the exact answer (session.against_exact) --------------------------------------------------------------
def test_a_position_off_eager_but_within_tolerance_of_the_exact_answer_is_right():
    # x + 1e4 - 1e4 in float32 keeps x only to ulp(1e4) ~ 1e-3: eager is off the exact answer, a kernel exact
    x = torch.randn(1000, generator=gen()) * 1e-3
    eager = (x + 1e4) - 1e4
    exact = (x.double() + 1e4) - 1e4
    kernel = exact.float()
    strict = C.compare([kernel], [eager], TOL)
    assert not strict.ok and "beyond atol=rtol=0.0001" in strict.reason
    judged = C.compare([kernel], [eager], TOL, exact=[exact])
    assert judged.ok and judged.nearer_exact == int((~torch.isclose(kernel, eager, 1e-4, 1e-4)).sum()) > 100
    # a kernel off both answers stays wrong, and the count of its mismatches leaves out the forgiven ones
    wrong = kernel.clone()
    wrong[:3] += 5e-3
    still = C.compare([wrong], [eager], TOL, exact=[exact])
    assert not still.ok and still.reason.startswith("output differs from the reference: 3 of 1000 elements")


def test_the_exact_answer_forgives_no_inf_or_nan_and_only_a_float64_one_of_the_same_shape_counts():
    eager = torch.tensor([float("inf"), float("nan"), 1.0, 2.0])
    exact = torch.tensor([1e39, 0.5, 1.0, 2.5], dtype=torch.float64)
    kernel = torch.tensor([3.0e38, 0.5, 1.0, 2.5])  # the exact answer where eager overflowed or made a NaN
    judged = C.compare([kernel], [eager], TOL, exact=[exact])
    assert not judged.ok and judged.nearer_exact == 1  # only position 3: eager's inf and NaN stand
    assert "finite where the reference is inf or NaN" in judged.reason
    for unusable in (exact.float(), exact[:3], torch.zeros(2, 2, dtype=torch.float64), None):
        assert C.compare([kernel[2:]], [eager[2:]], TOL, exact=[unusable]).nearer_exact == 0
