"""This host's measured figures for real (the unit tests fake them: tests/unit/test_targets.py): the copy
bandwidths, and the FMA loop that bounds the CPU's compute peak (agentkern/targets/fma_peak.py), compiled."""

from __future__ import annotations

import ctypes
import shutil

import pytest

from agentkern import targets


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTKERN_HOME", str(tmp_path / "home"))


def test_real_measurement():
    cpu = targets.get_target("cpu")
    assert cpu.memory_bandwidth_gbs > 0
    assert targets.cpu_cache_bandwidth_gbs() > 0
    assert cpu.peak_tflops["fp32"] > 0


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
def test_the_fma_loop_does_floating_point_work_at_a_plausible_rate():
    """The loop is compiled and timed for real: a rate of zero or one no CPU reaches (above 64 FLOPs a cycle at
    6 GHz per core) would be a loop the compiler removed or a clock misread."""
    from agentkern.targets import fma_peak

    one = fma_peak.measure_tflops(1, trials=2)
    assert 0.001 < one < 64 * 6e9 / 1e12
    lib = fma_peak.compile_loop()
    lib.fma_loop.argtypes = [ctypes.c_long, ctypes.c_int]
    lib.fma_loop.restype = ctypes.c_float
    # Each accumulator starts at 1 + j and moves towards a / (1 - m) = 0.1: the sum shows the work was done.
    assert lib.fma_loop(0, 1) == pytest.approx(sum(1.0 + j for j in range(lib.fma_accumulators())))
    assert lib.fma_loop(10_000_000, 1) < lib.fma_loop(0, 1)
