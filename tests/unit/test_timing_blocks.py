"""The judge's block loop (harness/timing.py) with stand-in sides: how many blocks it times, and the bound on
their whole wall time when drawing each call's inputs costs far more than the calls themselves (GPU sizes)."""

import time

import torch

from agentkern.harness import gpu_clocks
from agentkern.harness.sides import Block
from agentkern.harness.timing import BLOCK_MEMORY_BYTES, WALL_PER_BUDGET, block_memory_bytes, measure_blocks


class StandInSide:
    """Answers every call with the inputs' first tensor doubled, in `seconds` on the judge's clock, each block
    costing `overhead_s` besides; its dry blocks cost the overhead, those in `busy` (by index) `busy_s` more."""

    def __init__(self, seconds: float, overhead_s: float = 0.0, busy: tuple = (), busy_s: float = 0.0) -> None:
        self.seconds, self.blocks, self.dry_expected = seconds, 0, None
        self.overhead_s, self.busy, self.busy_s = overhead_s, busy, busy_s

    def run_block(self, calls, expected=None):
        self.blocks += 1
        return Block([[call[0] * 2] for call in calls], self.overhead_s + self.seconds * len(calls), {})

    def dry_block_seconds(self, calls, repeats, expected=None):
        self.dry_expected = expected
        if not self.overhead_s:
            return [self.seconds / 10] * repeats
        return [self.overhead_s + (self.busy_s if i in self.busy else 0.0) for i in range(repeats)]


def _blocks(reference, candidate, size: int = 4, draw_s: float = 0.0, **timing_options) -> dict:
    """measure_blocks over stand-in sides whose outputs always match, each call's input `size` floats that take
    `draw_s` to draw."""

    def fresh_inputs(i):
        time.sleep(draw_s)  # what a 256 MiB input costs to draw on the CPU, scaled down
        return [torch.full((size,), float(i))]

    return measure_blocks(
        reference,
        candidate,
        fresh_inputs,
        lambda dtype: 1e-5,
        lambda out, recent: None,
        [torch.zeros(size)],
        flush_bytes=4096,
        seed=0,
        **timing_options,
    )


def _measure(draw_s: float, budget_s: float, mode: str = "server", size: int = 4):
    reference, candidate = StandInSide(1e-6), StandInSide(1e-6)  # calls far below the budget
    # server: one call a block, the blocks are the calls
    timing = _blocks(reference, candidate, size, draw_s, mode=mode, time_budget_s=budget_s, min_calls=5, max_calls=200)
    return timing, reference, candidate


def test_blocks_stop_near_the_wall_bound_when_inputs_are_slow_to_draw():
    timing, reference, candidate = _measure(draw_s=0.01, budget_s=0.001)  # bound: 40 ms of blocks
    assert timing["stopped_at_wall_s"] == round(WALL_PER_BUDGET * 0.001, 1)
    blocks = timing["blocks"]
    assert 6 <= blocks < 20 and blocks % 2 == 0  # at least min_calls, each side first as often as the other
    assert timing["kernel"]["calls"] == blocks and candidate.blocks == blocks + 1  # plus the warm-up pair
    (expected,) = reference.dry_expected  # dry blocks are sized by the outputs' bytes too (a GPU's output copy)
    assert torch.equal(expected[0], torch.zeros(4))


def test_blocks_all_run_when_inputs_are_cheap():
    timing, _, _ = _measure(draw_s=0.0, budget_s=0.5)
    assert "stopped_at_wall_s" not in timing and timing["blocks"] == 200


def test_warming_is_nothing_off_the_gpu(monkeypatch):
    monkeypatch.setenv("AGENTKERN_GPU_WARM_MS", "50")
    started = time.perf_counter()
    gpu_clocks.warm(torch.device("cpu"))
    assert time.perf_counter() - started < 0.01 and gpu_clocks.warm_ms() == 50
    monkeypatch.setenv("AGENTKERN_GPU_WARM_MS", "nonsense")
    assert gpu_clocks.warm_ms() == gpu_clocks.DEFAULT_WARM_MS


def test_a_block_holds_as_many_calls_as_its_memory_allows(monkeypatch):
    """Offline, a block's calls are bounded by the bytes their inputs and outputs take (a GPU's share of its
    free memory, 256 MiB of host memory off it, or AGENTKERN_BLOCK_MEMORY_MB)."""
    assert block_memory_bytes(torch.device("cpu")) == block_memory_bytes(None) == BLOCK_MEMORY_BYTES
    size = 2**16  # 256 KiB of input a call, 512 KiB with its output
    monkeypatch.setenv("AGENTKERN_BLOCK_MEMORY_MB", "2")
    timing, _, _ = _measure(draw_s=0.0, budget_s=0.5, mode="offline", size=size)
    assert timing["calls_per_block"] == 4
    monkeypatch.setenv("AGENTKERN_BLOCK_MEMORY_MB", "0.25")
    timing, _, _ = _measure(draw_s=0.0, budget_s=0.5, mode="offline", size=size)
    assert timing["calls_per_block"] == 1
    monkeypatch.setenv("AGENTKERN_BLOCK_MEMORY_MB", "lots")  # not a number: as if unset
    assert block_memory_bytes(torch.device("cpu")) == BLOCK_MEMORY_BYTES


def test_a_busy_moment_in_the_dry_blocks_is_not_taken_off_the_calls():
    """Most dry blocks caught the host busy (each 2 ms longer than the 0.3 ms the machinery costs): the overhead
    taken off is the quiet one, so a 1 ms reference call still reads 1 ms, not nothing, and the 20 ms kernel
    20 ms. (With the dry blocks' median, the reference's time was clamped to nearly zero.)"""
    busy = (0, 1, 2, 4, 5, 6)  # 6 of the 7 probes
    reference = StandInSide(1e-3, overhead_s=3e-4, busy=busy, busy_s=2e-3)
    candidate = StandInSide(20e-3, overhead_s=3e-4)
    timing = _blocks(reference, candidate, mode="offline", time_budget_s=0.05, min_calls=3, max_calls=5)
    assert timing["handshake_us"] == 300.0
    assert abs(timing["reference"]["median_ms"] - 1.0) < 1e-6, timing["reference"]
    assert abs(timing["kernel"]["median_ms"] - 20.0) < 1e-6, timing["kernel"]
