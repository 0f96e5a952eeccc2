"""The op observer (harness/op_observer.py): the timed blocks' op allowlist, a RecordFunction callback in C++.

In this process (trusted code only): what it notes, what it refuses, how it tells that it was switched off,
disarmed or re-armed. Through the harness: an honest kernel's timed blocks are watched by it, and
tests/harness/attacks/fallback_when_unwatched.py is a candidate it catches (run by test_attacks.py).
"""

import pytest
import torch
from support import ROOT, fast_options

from agentkern.harness import op_observer


@pytest.fixture(scope="module")
def observer():
    lib = op_observer.library()
    if lib is None:
        pytest.skip("the op observer does not build here (no C++ compiler or no torch headers)")
    return op_observer.Observer(str(lib))


def test_notes_the_ops_of_a_block_and_only_those(observer):
    x = torch.randn(64)
    torch.sigmoid(x)  # before arming: not this block's
    observer.arm()
    torch.relu(x)
    names, tampered = observer.disarm()
    assert tampered is None
    assert "aten::relu" in names and "aten::sigmoid" not in names
    assert "aten::empty" in names  # the runner's canary, dispatched before reading back
    observer.arm()
    torch.sigmoid(torch.relu(x))
    torch.relu(x).neg()
    names, _ = observer.disarm()
    torch_ops = [n for n in names if n in ("aten::relu", "aten::sigmoid", "aten::neg")]
    assert torch_ops == ["aten::relu", "aten::sigmoid", "aten::neg"]  # once each, in the order first dispatched


def test_refuses_ops_the_trials_did_not_dispatch_unless_neutral(observer):
    observer.vetted = {"aten::relu", "aten::clamp_min"}
    try:
        assert observer.refused(["aten::relu", "aten::clamp_min", "aten::empty_like", "aten::view"]) is None
        assert observer.refused(["aten::relu", "aten::sigmoid"]) == "sigmoid"
        assert observer.refused(["aten::tanh", "aten::relu", "aten::sigmoid"]) == "tanh"  # the first, not by name
        assert observer.refused(["ak_0123::gemm", "PythonDispatchMode"]) is None  # a kernel's own op, not torch's
    finally:
        observer.vetted = set()


def test_sees_record_function_turned_off(observer):
    observer.arm()
    torch._C._autograd._enable_record_function(False)
    try:
        names, tampered = observer.disarm()
    finally:
        torch._C._autograd._enable_record_function(True)
    assert names == [] and tampered == "turned the op observer's callbacks off"
    observer.arm()
    assert observer.disarm()[1] is None  # back on: watched again


def test_sees_a_candidate_disarm_or_rearm_it(observer):
    observer.arm()
    observer.lib.ak_observer_arm()  # what a candidate reaching the library would do: the names start again
    assert observer.disarm()[1] == "disarmed or re-armed the op observer"
    observer.arms += 1  # in step again (a runner never recovers: its verdict is already a rejection)
    observer.arm()
    buf, armed, arms = (
        op_observer.ctypes.create_string_buffer(16),
        op_observer.ctypes.c_int(),
        op_observer.ctypes.c_uint64(),
    )
    observer.lib.ak_observer_disarm(buf, 16, op_observer.ctypes.byref(armed), op_observer.ctypes.byref(arms))
    assert observer.disarm()[1] == "disarmed or re-armed the op observer"


@pytest.mark.slow
def test_an_honest_kernels_timed_blocks_are_watched_by_the_observer():
    from agentkern.harness.evaluate import evaluate

    if op_observer.library() is None:
        pytest.skip("the op observer does not build here")
    result = evaluate(
        ROOT / "kernels_dataset" / "problems" / "relu.py",
        ROOT / "kernels_dataset" / "solutions" / "relu_cpp.py",
        "cpu",
        fast_options(),
    )
    assert result.status == "ok", result.error
    assert result.details["timed_op_watch"] == "op observer"
