"""Timing the reference and the candidate the same way, in the same process, interleaved.

CPU: a monotonic clock around each call. GPU: CUDA events (Triton's do_bench method), with an L2 flush
before every timed call and a device-wide synchronize, so work left on a side stream is still counted.
Two modes, as in the CUDA-L2 paper: `offline` (back to back) and `server` (cold caches, random gaps).
Every timed call gets fresh inputs: nothing a kernel cached from an earlier call can be reused.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass, field

import torch

_perf_counter_ns = time.perf_counter_ns  # bound before candidate code runs
_sleep = time.sleep


@dataclass
class Samples:
    ms: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        xs = sorted(self.ms)
        q = statistics.quantiles(xs, n=10, method="inclusive") if len(xs) >= 2 else xs * 9
        return {
            "median_ms": statistics.median(xs),
            "p10_ms": q[0],
            "p90_ms": q[-1],
            "min_ms": xs[0],
            "mean_ms": statistics.fmean(xs),
            "stdev_ms": statistics.stdev(xs) if len(xs) > 1 else 0.0,
            "calls": len(xs),
        }


class CacheFlusher:
    """Evicts caches by writing a buffer larger than the last-level cache (do_bench uses 256 MB on GPU)."""

    def __init__(self, device: torch.device, nbytes: int) -> None:
        self.buffer = torch.empty(nbytes // 4, dtype=torch.int32, device=device)

    def flush(self) -> None:
        self.buffer.zero_()


class Timer:
    """Times one call. Subclasses decide how (wall clock or CUDA events)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def sync(self) -> None:
        pass

    def time_call(self, fn, args) -> tuple[float, object]:
        t0 = _perf_counter_ns()
        out = fn(*args)
        t1 = _perf_counter_ns()
        return (t1 - t0) / 1e6, out


class CudaTimer(Timer):
    def __init__(self, device: torch.device) -> None:
        super().__init__(device)
        self._sync = torch.cuda.synchronize
        self._event = torch.cuda.Event

    def sync(self) -> None:
        self._sync(self.device)

    def time_call(self, fn, args) -> tuple[float, object]:
        start, end = self._event(enable_timing=True), self._event(enable_timing=True)
        start.record()
        out = fn(*args)
        # Synchronize the whole device before the end event: work a kernel left on another stream is
        # inside the measurement, not outside it.
        self._sync(self.device)
        end.record()
        end.synchronize()
        return start.elapsed_time(end), out


def make_timer(device: torch.device) -> Timer:
    return CudaTimer(device) if device.type == "cuda" else Timer(device)


def measure_interleaved(
    reference,
    candidate,
    fresh_inputs,
    check_output,
    *,
    device: torch.device,
    mode: str,
    time_budget_s: float,
    min_calls: int,
    max_calls: int,
    flush_bytes: int,
    rng: random.Random,
) -> tuple[Samples, Samples]:
    """Time `reference` and `candidate` alternately, each call on fresh inputs.

    fresh_inputs(i) -> (inputs for the reference, an identical copy for the candidate).
    check_output(ref_out, cand_out, i) validates every timed candidate call against the reference's
    output on the same inputs, so a kernel cannot behave differently once the correctness trials are over.
    """
    timer = make_timer(device)
    flusher = CacheFlusher(device, flush_bytes) if mode == "server" or device.type == "cuda" else None
    ref_samples, cand_samples = Samples(), Samples()

    def one(fn, args) -> tuple[float, object]:
        if flusher is not None:
            flusher.flush()
        if mode == "server":
            _sleep(rng.uniform(0.0, 0.002))  # random arrival gap: the CPU's clocks and caches go cold
        timer.sync()
        return timer.time_call(fn, args)

    # Warm-up: one call each, which also tells how many calls fit in the budget.
    ref_args, cand_args = fresh_inputs(-1)
    warm_ref, _ = one(reference, ref_args)
    warm_cand, _ = one(candidate, cand_args)
    per_pair_s = max((warm_ref + warm_cand) / 1e3, 1e-6)
    calls = int(min(max_calls, max(min_calls, time_budget_s / per_pair_s)))

    for i in range(calls):
        ref_args, cand_args = fresh_inputs(i)
        # Alternate who goes first, so neither side always inherits the other's cache state.
        if i % 2 == 0:
            ref_ms, ref_out = one(reference, ref_args)
            cand_ms, cand_out = one(candidate, cand_args)
        else:
            cand_ms, cand_out = one(candidate, cand_args)
            ref_ms, ref_out = one(reference, ref_args)
        timer.sync()
        check_output(ref_out, cand_out, i)
        ref_samples.ms.append(ref_ms)
        cand_samples.ms.append(cand_ms)
    return ref_samples, cand_samples
