"""Numerics through the whole harness: an honest kernel that overflows exactly where the reference does is
correct (inf equals inf), and a softmax whose exp only holds on small logits is incorrect on the trial that
scales its inputs by 4 (tests/harness/cheats/numerics_polynomial_softmax.py)."""

from support import ROOT, fast_options

from agentkern.harness import inputs as I
from agentkern.harness.evaluate import evaluate

# exp of logits up to ~150: about 1 in 1000 of them overflow fp32 (exp(x) = inf past x = 88.7), and at 4x
# the scale (trial scale_4) or with outliers many more. NaN is left out: exp never makes one from a finite x.
EXP_PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.exp(x)

def get_inputs():
    return [torch.randn(256, 256) * 30]

def get_init_inputs():
    return []
"""


def _elementwise_kernel(lib: str, value: str) -> str:
    """A candidate computing y[i] = `value` (C++, of x[i]) in a library of its own, called through ctypes."""
    return f"""
import ctypes
import torch
import torch.nn as nn
from agentkern.native import compile_cpp, ptr

_LIB = compile_cpp(r'''
#include <cmath>
extern "C" void each(const float* x, float* y, long n) {{
  for (long i = 0; i < n; ++i) y[i] = {value};
}}
''', "{lib}")
_LIB.each.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _LIB.each(ptr(x), ptr(y), x.numel())
        return y
"""


HONEST_EXP = _elementwise_kernel("numerics_exp", "std::exp(x[i])")


def test_an_honest_kernel_with_inf_where_the_reference_has_inf_is_correct(tmp_path):
    problem = tmp_path / "exp_large.py"
    problem.write_text(EXP_PROBLEM)
    solution = tmp_path / "exp_cpp.py"
    solution.write_text(HONEST_EXP)
    result = evaluate(problem, solution, "cpu", fast_options(check_timing=False))
    assert result.status == "ok", result.error
    labels = result.details["trial_inputs"]
    assert len(labels) == result.details["trials"] == 9
    assert labels[4:8] == list(I.TRANSFORMS)


def test_a_polynomial_softmax_is_incorrect_at_four_times_the_scale():
    cheat = ROOT / "tests" / "harness" / "cheats" / "numerics_polynomial_softmax.py"
    result = evaluate("softmax", cheat, "cpu", fast_options())
    assert result.status == "incorrect", result.error
    assert result.correct is False and result.speedup is None
    failed = result.details["failed_trial"]
    assert failed["trial"] == 4 and failed["inputs"] == "scale_4"
    assert "beyond atol=rtol=0.0001" in result.error
    # The four plain trials before it passed: only the transform caught it.
    assert result.details["trial_inputs"][:4][0] == "fresh"


def test_a_kernel_that_hard_codes_its_shape_is_caught_at_a_second_shape():
    specialised = ROOT / "tests" / "harness" / "shape_specialised_softmax.py"
    strict = evaluate("softmax", specialised, "cpu", fast_options(second_shape="require"))
    assert strict.status == "incorrect" and strict.speedup is None
    assert strict.error.startswith("at a second shape (batch_size=513, dim=513): output differs"), strict.error
    assert strict.details["failed_trial"]["shape"] == {"batch_size": 513, "dim": 513}
    # By default a shape-specialised kernel keeps its verdict, and the result says where it is wrong.
    reported = evaluate("softmax", specialised, "cpu", fast_options())
    assert reported.status == "ok", reported.error
    assert reported.details["second_shape"]["failed"].startswith("at a second shape (batch_size=513")


def test_an_honest_kernel_passes_at_the_second_shape():
    honest = ROOT / "kernels_dataset" / "solutions" / "softmax_cpp.py"
    result = evaluate("softmax", honest, "cpu", fast_options(second_shape="require"))
    assert result.status == "ok", result.error
    assert result.details["second_shape"] == {"constants": {"batch_size": 513, "dim": 513}, "trials": 2}


# a reference whose first call in its process is off (as torch 2.13's float32 exp was seen to be on a first
# call), right on every later call
UNSTEADY_PROBLEM = """
import torch
import torch.nn as nn

CALLS = [0]

class Model(nn.Module):
    def forward(self, x):
        CALLS[0] += 1
        return x * 2 + (1.0 if CALLS[0] == 1 else 0.0)

def get_inputs():
    return [torch.randn(64, 64)]

def get_init_inputs():
    return []
"""


def _twice(offset: str, lib: str) -> str:
    return _elementwise_kernel(lib, f"2.0f * x[i] + {offset}")


def test_a_reference_wrong_on_its_first_call_is_asked_again_before_a_kernel_is_called_incorrect(tmp_path):
    problem = tmp_path / "twice.py"
    problem.write_text(UNSTEADY_PROBLEM)
    right = tmp_path / "twice_cpp.py"
    right.write_text(_twice("0.0f", "numerics_twice"))
    result = evaluate(problem, right, "cpu", fast_options(check_timing=False))
    assert result.status == "ok", result.error
    assert [u["trial"] for u in result.details["reference_unsteady"]] == [0]
    # the reference's second answer is the one that counts: a kernel off by what its first answer was is wrong
    wrong = tmp_path / "twice_off_cpp.py"
    wrong.write_text(_twice("1.0f", "numerics_twice_off"))
    result = evaluate(problem, wrong, "cpu", fast_options(check_timing=False))
    assert result.status == "incorrect", result.error


# x + 1e4 - 1e4 in float32 keeps x only to ulp(1e4) ~ 1e-3, at every trial's scale: eager's own rounding is past
# the tolerance (1e-4, mostly absolute for values ~1e-3), the exact answer is x.
CANCELLING_PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        {check}return (x + 1e4) - 1e4

def get_inputs():
    return [torch.randn(128, 64) * 1e-3]

def get_init_inputs():
    return []
"""


def test_a_kernel_nearer_the_exact_answer_than_eager_is_correct_and_one_off_both_is_not(tmp_path):
    problem = tmp_path / "cancelling.py"
    problem.write_text(CANCELLING_PROBLEM.format(check=""))
    exact = tmp_path / "exact.py"
    exact.write_text(_elementwise_kernel("numerics_exact_sum", "(float)(((double)x[i] + 1e4) - 1e4)"))
    result = evaluate(problem, exact, "cpu", fast_options())
    assert result.status == "ok", result.error
    judged = result.details["exact_answer"]
    assert all(j["ok"] and j["nearer_exact"] > 0 for j in judged)
    assert judged[0]["at"] == "trial 0" and any(j["at"].startswith("timed call") for j in judged)
    off = tmp_path / "off.py"
    off.write_text(_elementwise_kernel("numerics_off_sum", "x[i] + 3e-4f"))
    result = evaluate(problem, off, "cpu", fast_options(check_timing=False))
    assert result.status == "incorrect" and "beyond atol=rtol=0.0001" in result.error


def test_where_the_reference_cannot_run_in_float64_eagers_answer_alone_judges(tmp_path):
    problem = tmp_path / "cancelling_float32_only.py"
    problem.write_text(CANCELLING_PROBLEM.format(check='assert x.dtype == torch.float32, "float32 only"\n        '))
    exact = tmp_path / "exact.py"
    exact.write_text(_elementwise_kernel("numerics_exact_sum", "(float)(((double)x[i] + 1e4) - 1e4)"))
    result = evaluate(problem, exact, "cpu", fast_options(check_timing=False))
    assert result.status == "incorrect" and "beyond atol=rtol=0.0001" in result.error
    assert "float32 only" in result.details["exact_answer"][0]["unavailable"]
