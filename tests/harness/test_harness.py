"""Harness behaviour beyond the corpus: isolation, fresh inputs, tolerances, timing modes. (The roofline check:
tests/unit/test_roofline.py.)"""

import json
import os
import sys
from pathlib import Path

import pytest
from support import RELU_KERNEL, fast_options

from agentkern.harness.evaluate import evaluate

HONEST_RELU = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return relu_kernel(x, {noise})
"""

RECORDING_RELU = """
import ctypes
import os
import torch
import torch.nn as nn

LOG = "calls.log"  # in its own folder: the only one it may write to
os.environ["CANDIDATE_WAS_HERE"] = "1"

class ModelNew(nn.Module):
    def forward(self, x):
        with open(LOG, "a") as f:
            f.write(f"{x.data_ptr()} {hash(bytes(memoryview(ctypes.string_at(x.data_ptr(), x.numel() * 4))))!r}\\n")
        return relu_kernel(x)
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(RELU_KERNEL + text)
    return path


def test_candidate_code_runs_in_a_child_and_every_timed_call_gets_fresh_inputs(tmp_path):
    solution = write(tmp_path, "recording.py", RECORDING_RELU)
    opts = fast_options(min_timed_calls=6, max_timed_calls=6)
    result = evaluate("relu", solution, "cpu", opts, keep_workdir=True)
    assert result.status == "ok", result.error
    log = Path(result.details["workdir"]) / "runners" / "candidate" / "calls.log"
    assert "CANDIDATE_WAS_HERE" not in os.environ  # its module code ran elsewhere
    assert not any(name.startswith("agentkern_candidate") for name in sys.modules)
    calls = [line.split() for line in log.read_text().splitlines()]
    # 9 correctness trials (EvalOptions.trials) + 2 at a second shape + 1 warm-up + 6 timed calls, no two with
    # the same values.
    assert len(calls) == 18
    assert len({checksum for _, checksum in calls}) == 18
    # Every trial's inputs are at the same address (new contents) to expose caches keyed on the pointer.
    assert calls[0][0] == calls[1][0] == calls[2][0] == calls[4][0]


def test_the_harness_own_input_views_are_not_charged_to_the_candidate(tmp_path):
    # The candidate's calls run under the op allowlist's dispatch mode (~3 us an op it dispatches); the views
    # the harness makes of each call's inputs must be made outside it, as they are for the reference, or every
    # candidate call pays for ops that are not its own (15-20 us a call were, on 2026-11-26).
    honest = write(tmp_path, "relu.py", HONEST_RELU.format(noise="0.0"))
    result = evaluate("relu", honest, "cpu", fast_options())
    assert result.status == "ok", result.error
    assert result.details["candidate_ops"] == ["empty_like"]  # relu_kernel's one allocation, nothing else
    assert result.details["reference_ops"] == ["relu"]


def test_tolerance_is_configurable_per_dtype(tmp_path):
    noisy = write(tmp_path, "noisy.py", HONEST_RELU.format(noise="5e-4"))
    strict = evaluate("relu", noisy, "cpu", fast_options())
    assert strict.status == "incorrect" and "atol=rtol=0.0001" in strict.error
    loose_opts = fast_options()
    loose_opts.tolerances["float32"] = 1e-3
    loose = evaluate("relu", noisy, "cpu", loose_opts)
    assert loose.status == "ok", loose.error


def test_server_mode_times_with_cold_caches(tmp_path):
    honest = write(tmp_path, "relu.py", HONEST_RELU.format(noise="0.0"))
    result = evaluate("relu", honest, "cpu", fast_options(mode="server"))
    assert result.status == "ok", result.error
    timing = result.details["timing"]
    assert timing["mode"] == "server"
    for side in ("reference", "kernel"):
        assert timing[side]["calls"] >= 3
        assert timing[side]["p10_ms"] <= timing[side]["median_ms"] <= timing[side]["p90_ms"]


def test_same_seed_gives_the_same_trials(tmp_path):
    honest = write(tmp_path, "relu.py", HONEST_RELU.format(noise="0.0"))
    a = evaluate("relu", honest, "cpu", fast_options(seed=123, check_timing=False))
    b = evaluate("relu", honest, "cpu", fast_options(seed=123, check_timing=False))
    assert a.details["seeds"] == b.details["seeds"] == list(range(123, 132))
    assert a.details["max_abs_diff"] == b.details["max_abs_diff"]


def test_result_is_json_serialisable(tmp_path):
    honest = write(tmp_path, "relu.py", HONEST_RELU.format(noise="0.0"))
    result = evaluate("relu", honest, "cpu", fast_options())
    assert json.loads(json.dumps(result.to_json()))["status"] == "ok"


def _spinners_outside_the_judges_tree(seconds: float) -> list[int]:
    """One busy process per core, orphaned at once (their parent exits): other programs, to the judge."""
    import subprocess

    spin = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass\n"
    script = (
        f"import subprocess, sys\nfor _ in range({os.cpu_count() or 1}):\n"
        f"    p = subprocess.Popen([sys.executable, '-c', {spin!r}], stdout=subprocess.DEVNULL, "
        "stderr=subprocess.DEVNULL)\n    print(p.pid, flush=True)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return [int(pid) for pid in out.split()]


@pytest.mark.quiet_host
def test_a_measurement_on_a_host_other_programs_keep_busy_is_taken_again_and_flagged(tmp_path):
    # harness/host_load.py: the judge's own tree (both runners) is its work; anything else is the host's load.
    from agentkern.harness import host_load

    honest = write(tmp_path, "relu.py", HONEST_RELU.format(noise="0.0"))
    quiet = evaluate("relu", honest, "cpu", fast_options())
    assert quiet.status == "ok", quiet.error
    assert set(quiet.details["timing"]["host_load"]) >= {"others_share", "steal_share", "busy_share", "disturbed"}
    spinners = _spinners_outside_the_judges_tree(120)
    try:
        busy = evaluate("relu", honest, "cpu", fast_options(busy_host_attempts=3))
    finally:
        for pid in spinners:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
    assert busy.status == "ok", busy.error
    load = busy.details["timing"]["host_load"]
    assert load["disturbed"] and len(load["attempts"]) == 3, load
    assert all(share > host_load.DISTURBED_SHARE for share in load["attempts"])
    assert host_load.note(load).startswith("busy host")
