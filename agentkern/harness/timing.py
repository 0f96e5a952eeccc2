"""Timing the reference and the candidate the same way, from the judge, in blocks of calls.

Each side runs in its own runner process (runners.py). A block of n calls is timed on the judge's clock,
from just before the runner is thawed to just after it is stopped again having answered: a candidate
cannot touch the clock, and work it defers past its answer is still inside its time. The cost of the
machinery itself (thaw, the command, the inputs' views, the answer, stop; on a GPU also the outputs' copy
into the judge's region, the judge's fence and the switches between the two processes' GPU contexts) is
measured on the reference's runner with dry blocks of the same size (the quickest of them) and taken off both
sides; blocks are sized so that it stays a small part of a block even so. Blocks alternate between the sides,
each call gets fresh inputs in fresh memory, and every timed output is compared with the reference's output for
the same inputs.
Two modes, as in the CUDA-L2 paper: `offline` (blocks of back-to-back calls) and `server` (one call per
block, the last-level cache flushed and a random gap before each). On a GPU the inputs and outputs are in
the judge's device memory (cuda_ipc.py, device_outputs.py): no host copy inside a block.
"""

from __future__ import annotations

import math
import os
import random
import resource
import statistics
import time
from dataclasses import dataclass, field

import torch

_sleep = time.sleep


@dataclass
class Samples:
    ms: list[float] = field(default_factory=list)

    def summary(self, calls_per_sample: int = 1) -> dict:
        xs = sorted(self.ms)
        q = statistics.quantiles(xs, n=10, method="inclusive") if len(xs) >= 2 else xs * 9
        return {
            "median_ms": statistics.median(xs),
            "p10_ms": q[0],
            "p90_ms": q[-1],
            "min_ms": xs[0],
            "mean_ms": statistics.fmean(xs),
            "stdev_ms": statistics.stdev(xs) if len(xs) > 1 else 0.0,
            "calls": len(xs) * calls_per_sample,
        }


class CacheFlusher:
    """Evicts caches by writing a buffer larger than the last-level cache (do_bench uses 256 MB on GPU)."""

    def __init__(self, device: torch.device, nbytes: int) -> None:
        self.buffer = torch.empty(nbytes // 4, dtype=torch.int32, device=device)

    def flush(self) -> None:
        self.buffer.zero_()
        if self.buffer.is_cuda:
            torch.cuda.synchronize(self.buffer.device)  # done before the runner is thawed


TARGET_BLOCK_S = 0.02  # per-block costs (a first call on cold caches) stay a small part of a block
BLOCK_MEMORY_BYTES = 256 * 2**20  # inputs and kept outputs of one block, per side, in host memory
# On a GPU they live in device memory (the judge's regions, the runner's outputs): a block there may hold up to
# this share of the device's free memory, so that a large problem still gets several back-to-back calls a block.
# One call a block at 8192 x 8192 fp32 left 0.4-0.6 ms of per-block cost in each 0.2-0.3 ms call (H100, docs/harness.md).
DEVICE_BLOCK_MEMORY_SHARE = 1 / 16
DEVICE_BLOCK_MEMORY_MAX = 4 * 2**30
HANDSHAKE_PROBES = 7
# The blocks' whole wall time, inputs drawn and written included, stays near this many times the budget for the
# calls themselves: at a GPU size each fresh 256 MiB input takes ~0.5 s to draw on the CPU, which the calls'
# budget does not see (an H100 evaluation of softmax at 8192 x 8192 took over 165 s without this bound).
WALL_PER_BUDGET = 40


def _per_call_ms(block_s: float, handshake_s: float, calls: int) -> float:
    return max(block_s - handshake_s, 1e-9) / calls * 1e3


def block_memory_bytes(device: torch.device | None) -> int:
    """How many bytes of inputs and outputs one block of one side may hold (AGENTKERN_BLOCK_MEMORY_MB overrides)."""
    try:
        override = float(os.environ.get("AGENTKERN_BLOCK_MEMORY_MB") or 0)
    except ValueError:
        override = 0.0  # not a number: the sizing below, as when unset
    if override > 0:
        return max(1, int(override * 2**20))
    if device is None or device.type != "cuda":
        return BLOCK_MEMORY_BYTES
    free, _ = torch.cuda.mem_get_info(device)
    # The inputs (half of a call's bytes) pass through the host arena, a file: the judge's file-size limit bounds it.
    file_limit, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    by_file = DEVICE_BLOCK_MEMORY_MAX if file_limit == resource.RLIM_INFINITY else file_limit
    return max(BLOCK_MEMORY_BYTES, min(DEVICE_BLOCK_MEMORY_MAX, by_file, int(free * DEVICE_BLOCK_MEMORY_SHARE)))


def _block_size(per_call_s: float, call_bytes: int, calls: int, mode: str, memory_bytes: int) -> int:
    if mode == "server":
        return 1
    by_time = math.ceil(TARGET_BLOCK_S / max(per_call_s, 1e-9))
    by_memory = max(1, memory_bytes // max(call_bytes, 1))
    return max(1, min(by_time, by_memory, calls))


class _Pairs:
    """Both sides on the same fresh inputs, one block each, every candidate output checked."""

    def __init__(
        self, reference, candidate, fresh_inputs, tolerance_for, explain_mismatch, like, flusher, rng, second_look=None
    ):
        self.reference, self.candidate, self.fresh_inputs = reference, candidate, fresh_inputs
        self.tolerance_for, self.explain_mismatch, self.like = tolerance_for, explain_mismatch, like
        self.second_look = second_look  # (args, expected, taken, mismatch, where) -> the comparison that stands
        self.flusher, self.rng = flusher, rng
        self.handshake_s = self.overhead_s(1)
        self.counter = iter(range(10**9))
        self.recent: list = []  # the last few answers of earlier blocks: a candidate replaying one is caching

    def overhead_s(self, n: int) -> float:
        """What a block of n calls costs besides the calls (handshake, command, inputs' views, answer), as the
        quickest of dry blocks on the reference's runner: taken off both sides' blocks. The quickest, not the
        median: a busy host only adds to a dry block, and an overhead taken off larger than the one a timed
        block carried shrinks the quicker side's time most, so a block no longer than the overhead read as
        no time at all (a 1 ms relu block less a 1 ms handshake of a busy moment)."""
        sample = self.fresh_inputs(-2)
        return min(self.reference.dry_block_seconds([sample] * n, HANDSHAKE_PROBES, [self.like] * n))

    def _timed(self, side, calls):
        if self.flusher is not None:
            self.flusher.flush()
            _sleep(self.rng.uniform(0.0, 0.002))  # random arrival gap: the CPU's clocks and caches go cold
        return side.run_block(calls, [self.like] * len(calls))

    def pair(self, n: int, cand_first: bool) -> tuple[float, float]:
        """(reference, candidate) ms per call over a block of n calls each."""
        from agentkern.harness import correctness as C
        from agentkern.harness.allowlist import fallback_verdict
        from agentkern.harness.rejections import Rejected

        calls = [self.fresh_inputs(next(self.counter)) for _ in range(n)]
        first, second = (self.candidate, self.reference) if cand_first else (self.reference, self.candidate)
        one, other = self._timed(first, calls), self._timed(second, calls)
        ref, got = (other, one) if cand_first else (one, other)
        for i, (out, exp) in enumerate(zip(got.outputs, ref.outputs)):
            cmp = C.compare(out, exp, self.tolerance_for)
            if not cmp.ok and self.second_look is not None:
                cmp = self.second_look(calls[i], exp, out, cmp, f"timed call {i}")
            if not cmp.ok:
                self.explain_mismatch(out, self.recent + ref.outputs[:i])
                raise Rejected("timed_output_mismatch", f"timed call {i} of a block of {n}: {cmp.reason}")
        fallback = fallback_verdict(got.answer)
        if fallback is not None:  # it fell back to torch or numpy while timed (its outputs were right: checked above)
            raise fallback
        self.recent[:] = (ref.outputs[-3:] + self.recent)[:3]
        return _per_call_ms(ref.seconds, self.handshake_s, n), _per_call_ms(got.seconds, self.handshake_s, n)


def measure_blocks(
    reference,
    candidate,
    fresh_inputs,
    tolerance_for,
    explain_mismatch,
    like: list,
    *,
    mode: str,
    time_budget_s: float,
    min_calls: int,
    max_calls: int,
    flush_bytes: int,
    seed: int,
    device: torch.device | None = None,
    second_look=None,
) -> dict:
    """Time `reference` and `candidate` (sides.Side) alternately in blocks; fresh_inputs(i) gives the i-th
    call's arguments, `like` the outputs' shapes and dtypes (the reference's outputs of a trial). Every
    candidate output of every timed call is checked against the reference's (a mismatch given a `second_look`
    at the reference's exact answer, session.py)."""
    rng = random.Random(seed)
    # On a GPU the judge's own context flushes the L2, which every context on the device shares.
    flusher = CacheFlusher(device or torch.device("cpu"), flush_bytes) if mode == "server" else None
    pairs = _Pairs(reference, candidate, fresh_inputs, tolerance_for, explain_mismatch, like, flusher, rng, second_look)
    warm_ref, warm_cand = pairs.pair(1, False)  # warm-up, checked, not counted; it also sizes the blocks
    calls = int(min(max_calls, max(min_calls, time_budget_s / max((warm_ref + warm_cand) / 1e3, 1e-6))))
    sample = fresh_inputs(-1)
    call_bytes = 2 * sum(x.numel() * x.element_size() for x in sample if isinstance(x, torch.Tensor))
    n = _block_size(min(warm_ref, warm_cand) / 1e3, call_bytes, calls, mode, block_memory_bytes(device))
    blocks = max(min(3, calls), math.ceil(calls / n))
    n = max(1, math.ceil(calls / blocks)) if mode != "server" else 1
    pairs.handshake_s = pairs.overhead_s(n)
    ref_samples, cand_samples = Samples(), Samples()
    wall_limit_s, started = WALL_PER_BUDGET * time_budget_s, time.perf_counter()
    fewest = max(min(3, blocks), math.ceil(min_calls / n))
    for b in range(blocks):
        ref_ms, cand_ms = pairs.pair(n, cand_first=b % 2 == 1)  # alternate who goes first
        ref_samples.ms.append(ref_ms)
        cand_samples.ms.append(cand_ms)
        done = b + 1
        if done >= fewest and done % 2 == 0 and time.perf_counter() - started > wall_limit_s:
            break  # each side went first as often as the other
    block = {"blocks": len(ref_samples.ms), "calls_per_block": n, "handshake_us": round(pairs.handshake_s * 1e6, 1)}
    if len(ref_samples.ms) < blocks:
        block["stopped_at_wall_s"] = round(wall_limit_s, 1)
    return {"reference": ref_samples.summary(n), "kernel": cand_samples.summary(n), "mode": mode, **block}
