"""perf stat on a real kernel here (software events count even on a VM), or the reason it cannot."""

import shutil

import pytest
from support import ROOT

from agentkern.harness import counters
from agentkern.harness.evaluate import hardware_counters


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_perf_counts_a_real_kernel_here_or_says_why_not():
    result = hardware_counters(
        ROOT / "kernels_dataset/problems/softmax.py", ROOT / "kernels_dataset/solutions/softmax_cpp.py", "cpu"
    )
    if counters.perf_unavailable_reason():
        assert result == {"available": False, "why": counters.perf_unavailable_reason()}
        return
    assert result["available"], result
    values = result["values"]
    assert values["task-clock"] > 0 and values["cpus_utilized"] > 0.5  # the OpenMP kernel keeps a core busy
