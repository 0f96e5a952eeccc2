"""The roofline check on a verdict (harness/roofline_check.py): a speedup beyond what the target allows is
named `suspicious`, never silently rejected; the host's figures behind a CPU bound are the fastest ever
measured, measured again before a kernel is called suspicious; and the flops of attention count on the CPU
too (torch's flop registry knows only the GPU kernels)."""

import json

import pytest

from agentkern import targets
from agentkern.harness import roofline_check
from agentkern.harness.device_lock import timing_lock
from agentkern.harness.evaluate import _add_roofline
from agentkern.targets import host
from agentkern.traces.jsonl import FAILURE_REWARD, reward
from agentkern.types import STATUSES, EvalResult

SLOW = {
    "dram_gbs": 1.0,
    "cache_gbs": 1.0,
    "matmul_tflops": 0.001,
    "fma_tflops": 0.001,
    "trials": 12,
    "cache_copy_kib": 64,
}
FAST = {**SLOW, "dram_gbs": 1000.0, "cache_gbs": 1000.0}
# 1 MB moved, no flops: on a CPU measured at 1 GB/s the bound is 1 ms; at 1000 GB/s, 1 us.
WORK = {"flops": 0.0, "bytes": 1e6, "dtype": "float32"}


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTKERN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AGENTKERN_LOCK_DIR", raising=False)


@pytest.fixture
def measurements(monkeypatch):
    """The host measurement replaced: each call returns the next figures queued (the last one again)."""
    queue, calls = [], []

    def fake(cores, l2_kb):
        calls.append((cores, l2_kb))
        return dict(queue[min(len(calls), len(queue)) - 1])

    monkeypatch.setattr(host, "_measure_host", fake)
    return queue, calls


def ok(kernel_ms, work=WORK):
    return EvalResult(
        "ok", True, speedup=1.0 / kernel_ms, reference_ms=1.0, kernel_ms=kernel_ms, details={"work": dict(work)}
    )


# ---- the margin -------------------------------------------------------------------------------------------


def test_beyond_the_roofline_means_faster_than_the_bound_less_the_margin():
    assert targets.ROOFLINE_MARGIN == 0.10
    assert targets.beyond_roofline(0.89, 1.0) and not targets.beyond_roofline(0.91, 1.0)
    assert not targets.beyond_roofline(1.5, 1.0)
    assert not targets.beyond_roofline(None, 1.0) and not targets.beyond_roofline(0.5, 0.0)
    assert targets.beyond_roofline(0.5, 1.0, margin=0.4) and not targets.beyond_roofline(0.7, 1.0, margin=0.4)


def test_a_gpu_kernel_within_the_margin_is_ok_and_beyond_it_suspicious_without_re_measuring():
    target = targets.get_target("h100")
    # 1 GB moved on an H100 (3.35 TB/s) cannot take less than ~0.3 ms.
    work = {"flops": 0.0, "bytes": 1e9, "dtype": "float32"}
    bound = targets.roofline_ms(target, 0.0, 1e9, "float32")

    def never():
        raise AssertionError("a GPU's figures are published: nothing to re-measure")

    near = ok(bound * 0.95, work)  # beats the bound, but within the margin: noise, not a cheat
    _add_roofline(near, target, "cuda", remeasure=never)
    assert near.status == "ok" and near.correct and near.roofline_fraction > 1
    assert "suspicious" not in near.details and "roofline_check" not in near.details

    fast = ok(0.1, work)
    _add_roofline(fast, target, "cuda", remeasure=never)
    assert fast.status == "suspicious" and not fast.correct and fast.details["outputs_matched"] is True
    assert "beats the h100 roofline" in fast.details["suspicious"] and "10% margin" in fast.error
    assert fast.details["bound"] == "memory" and fast.roofline_fraction > 1
    check = fast.details["roofline_check"]
    assert check["bound_ms"] == pytest.approx(bound) and check["margin"] == 0.10
    assert check["kernel_ms"] == 0.1 and "published figures" in check["remeasured"]["skipped"]

    honest = ok(1.0, work)
    _add_roofline(honest, target, "cuda", remeasure=never)
    assert honest.status == "ok" and 0 < honest.roofline_fraction < 1 and "suspicious" not in honest.details


def test_only_an_ok_verdict_is_checked():
    wrong = EvalResult("incorrect", False, kernel_ms=0.001, details={"work": dict(WORK)})
    _add_roofline(wrong, targets.get_target("h100"), "cuda")
    assert wrong.status == "incorrect" and "suspicious" not in wrong.details


def test_suspicious_is_a_status_of_its_own_with_no_reward_and_no_penalty():
    assert "suspicious" in STATUSES
    assert reward({"correct": False, "status": "suspicious", "speedup": 50.0}) == (0.0, "suspicious")
    assert reward({"correct": False, "status": "incorrect", "speedup": None}) == (FAILURE_REWARD, "failure")


# ---- the host's figures -----------------------------------------------------------------------------------


def test_a_measurement_is_the_best_of_several_rounds(monkeypatch):
    rounds = iter(
        [
            {
                "dram_gbs": 10.0,
                "cache_gbs": 300.0,
                "matmul_tflops": 0.1,
                "fma_tflops": 0.3,
                "trials": 4,
                "cache_copy_kib": 64,
            },
            {
                "dram_gbs": 30.0,
                "cache_gbs": 100.0,
                "matmul_tflops": 0.05,
                "fma_tflops": 0.5,
                "trials": 4,
                "cache_copy_kib": 64,
            },
            {
                "dram_gbs": 20.0,
                "cache_gbs": 200.0,
                "matmul_tflops": 0.2,
                "fma_tflops": 0.4,
                "trials": 4,
                "cache_copy_kib": 64,
            },
        ]
    )
    monkeypatch.setattr(host, "_measure_round", lambda cores, l2_kb: next(rounds))
    best = host._measure_host(2, 1024.0)
    assert (best["dram_gbs"], best["cache_gbs"], best["matmul_tflops"], best["fma_tflops"]) == (30.0, 300.0, 0.2, 0.5)
    assert best["trials"] == host._TRIALS * host._ROUNDS


def test_the_cache_keeps_the_fastest_figure_ever_measured(tmp_path, measurements):
    queue, calls = measurements
    queue += [
        {**SLOW, "dram_gbs": 20.0, "cache_gbs": 200.0},
        {**SLOW, "dram_gbs": 10.0, "cache_gbs": 100.0},  # measured while the machine was busy
        {**SLOW, "dram_gbs": 30.0, "cache_gbs": 150.0},
    ]
    assert targets.get_target("cpu").memory_bandwidth_gbs == 20.0

    slower = targets.remeasure_host()
    assert slower["before"]["dram_gbs"] == 20.0 and slower["measured"]["dram_gbs"] == 10.0
    assert slower["after"] == {"dram_gbs": 20.0, "cache_gbs": 200.0, "matmul_tflops": 0.001, "fma_tflops": 0.001}
    assert targets.get_target("cpu").memory_bandwidth_gbs == 20.0 and targets.cpu_cache_bandwidth_gbs() == 200.0

    mixed = targets.remeasure_host()  # each figure on its own: DRAM faster, cache slower
    assert mixed["after"]["dram_gbs"] == 30.0 and mixed["after"]["cache_gbs"] == 200.0
    cpu = targets.get_target("cpu")
    assert cpu.memory_bandwidth_gbs == 30.0 and targets.cpu_cache_bandwidth_gbs() == 200.0
    assert "fastest of 3 measurement(s)" in cpu.sources["memory_bandwidth_gbs"]
    assert len(calls) == 3
    [cached] = (tmp_path / "home" / "cache" / "targets").glob("cpu-*.json")
    record = json.loads(cached.read_text())
    assert record["measurements"] == 3 and record["last"]["dram_gbs"] == 30.0 and record["locked"] is True


def test_a_first_measurement_waits_for_the_timing_lock_only_so_long(measurements, monkeypatch):
    queue, calls = measurements
    queue.append(SLOW)
    monkeypatch.setattr(host, "LOCK_WAIT_S", 0.2)
    with timing_lock("cpu"):  # another worker timing a candidate, for longer than the wait
        cpu = targets.get_target("cpu")  # figures are needed: measured anyway, and marked so
    assert cpu.memory_bandwidth_gbs == SLOW["dram_gbs"] and len(calls) == 1
    [cached] = host._cache_path(host._cpu_facts()).parent.glob("cpu-*.json")
    assert json.loads(cached.read_text())["locked"] is False
    with timing_lock("cpu"):
        assert targets.remeasure_host(lock_wait_s=0.2) == {"skipped": "the CPU's timing lock stayed busy for 0.2 s"}
    assert len(calls) == 1  # a re-measurement never runs beside another timing


# ---- the check: re-measure, then judge --------------------------------------------------------------------


def test_a_kernel_beating_a_bound_from_slow_figures_is_ok_once_the_host_is_measured_again(measurements):
    """The field bug: figures measured while the machine was busy made an honest kernel beat the bound."""
    queue, calls = measurements
    queue += [SLOW, FAST]
    cpu = targets.get_target("cpu")
    result = ok(0.1)  # 10x faster than the 1 ms bound of the slow figures
    _add_roofline(result, cpu, "cpu")
    assert len(calls) == 2  # measured again
    assert result.status == "ok" and result.correct and result.error is None
    assert "suspicious" not in result.details
    assert result.details["roofline_bound_ms"] == pytest.approx(1e-3)  # recomputed from the new figures
    assert result.roofline_fraction == pytest.approx(1e-2)
    check = result.details["roofline_check"]
    assert check["first_bound_ms"] == pytest.approx(1.0) and check["bound_ms"] == pytest.approx(1e-3)
    assert check["remeasured"]["before"]["cache_gbs"] == 1.0 and check["remeasured"]["after"]["cache_gbs"] == 1000.0
    assert check["outcome"].startswith("within the bound")


def test_a_kernel_still_beating_the_bound_after_re_measuring_is_suspicious(measurements):
    queue, calls = measurements
    queue += [SLOW, SLOW]
    result = ok(0.1)
    _add_roofline(result, targets.get_target("cpu"), "cpu")
    assert len(calls) == 2
    assert result.status == "suspicious" and result.correct is False and result.details["outputs_matched"]
    assert result.speedup == 10.0 and result.kernel_ms == 0.1  # the figures stay, for the reader to judge
    why = result.details["suspicious"]
    assert "beats the cpu roofline bound of 1 ms" in why and "10% margin" in why and "measuring the host again" in why
    assert result.error.startswith("0.1 ms beats") and result.error.endswith("a timing error or a cheat, not a result")
    check = result.details["roofline_check"]
    assert check["bound_ms"] == pytest.approx(1.0) and check["limit_ms"] == pytest.approx(0.9)
    assert check["remeasured"]["measured"]["dram_gbs"] == 1.0 and check["outcome"] == "suspicious"
    assert check["figures"]["cache_bandwidth_gbs"] == 1.0


def test_a_re_measurement_that_cannot_get_the_lock_says_so(measurements, monkeypatch):
    queue, calls = measurements
    queue.append(SLOW)
    cpu = targets.get_target("cpu")
    monkeypatch.setattr(roofline_check, "LOCK_WAIT_S", 0.2)
    result = ok(0.1)
    with timing_lock("cpu"):
        _add_roofline(result, cpu, "cpu")
    assert len(calls) == 1  # not measured beside another timing
    assert result.status == "suspicious"
    assert "host not measured again: the CPU's timing lock stayed busy for 0.2 s" in result.details["suspicious"]


def test_attention_flops_are_counted_on_cpu():
    """torch's flop registry knows the GPU attention kernels only; the CPU one must count too (roofline)."""
    import torch
    import torch.nn.functional as F

    from agentkern.harness.fallback import OpRecorder

    q, k, v = torch.randn(2, 3, 16, 8), torch.randn(2, 3, 24, 8), torch.randn(2, 3, 24, 8)
    with torch.no_grad(), OpRecorder() as recorder:
        F.scaled_dot_product_attention(q, k, v)
    assert recorder.flops == 2 * (2 * 2 * 3 * 16 * 24 * 8)  # q @ k^T and p @ v
    with torch.no_grad(), OpRecorder() as recorder:
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
    seen = sum(min(i + 1, 24) for i in range(16))  # query i sees keys 0..i
    assert recorder.flops == 2 * (2 * 2 * 3 * seen * 8)


# ---- the kernel timed again ---------------------------------------------------------------------------------
def test_a_kernel_beyond_the_bound_once_but_not_when_timed_again_is_ok_with_the_second_timing():
    target = targets.get_target("h100")
    work = {"flops": 0.0, "bytes": 1e9, "dtype": "float32"}
    bound = targets.roofline_ms(target, 0.0, 1e9, "float32")
    again = EvalResult("ok", True, speedup=2.0, reference_ms=2 * bound, kernel_ms=bound, details={"timing": {"x": 1}})
    result = ok(0.1, work)
    _add_roofline(result, target, "cuda", remeasure=lambda: {}, retime=lambda: again)
    assert result.status == "ok" and result.correct and result.error is None
    assert result.kernel_ms == bound and result.speedup == 2.0 and result.details["timing"] == {"x": 1}
    assert "suspicious" not in result.details and result.roofline_fraction == pytest.approx(1.0)
    check = result.details["roofline_check"]
    assert check["retimed"]["kernel_ms"] == bound and check["outcome"].startswith("within the bound when")


def test_a_kernel_beyond_the_bound_when_timed_twice_is_suspicious():
    target = targets.get_target("h100")
    work = {"flops": 0.0, "bytes": 1e9, "dtype": "float32"}
    again = EvalResult("ok", True, speedup=30.0, reference_ms=3.0, kernel_ms=0.1, details={})
    result = ok(0.1, work)
    _add_roofline(result, target, "cuda", remeasure=lambda: {}, retime=lambda: again)
    assert result.status == "suspicious" and result.correct is False
    assert result.details["roofline_check"]["outcome"] == "suspicious (timed twice)"
    assert "again when timed a second time" in result.error
