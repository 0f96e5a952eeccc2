"""The inputs of the correctness trials and of the timed calls, made in the judge from the problem's
get_inputs() and seeds that never leave the judge.

Every trial's inputs reach the candidate at the same address (slot 0 of its arena), so a cache keyed on
the pointer, the shape or a sample of the input is exposed by trials that keep most of the values:
trials 1 and 3 are trials 0 and 2 with two pairs of elements swapped (two probes, so a spot check that
happens to see a swapped element once is still caught); the other trials are fresh draws.
"""

from __future__ import annotations

import random

import torch

SWAPPED_PAIRS = 2


class TrialInputs:
    def __init__(self, problem, seeds: list[int]) -> None:
        self.problem = problem
        self.seeds = seeds
        self._made: dict[int, list] = {}

    def draw(self, seed: int) -> list:
        torch.manual_seed(seed)
        return [x.detach().cpu() if isinstance(x, torch.Tensor) else x for x in self.problem.get_inputs()]

    def inputs(self, trial: int) -> list:
        if trial not in self._made:
            self._made[trial] = self._make(trial)
        return self._made[trial]

    def _make(self, trial: int) -> list:
        if trial in (1, 3):
            return _swap_pairs(self.inputs(trial - 1), self.seeds[trial])
        return self.draw(self.seeds[trial])

    def describe(self, trial: int) -> dict:
        if trial in (1, 3):
            return {"inputs": f"trial {trial - 1}'s with {SWAPPED_PAIRS} pairs of elements swapped"}
        return {"inputs": "get_inputs()"}

    def timing_inputs(self, seed: int):
        """inputs(i) for the i-th timed call: new memory and new values on every call, cheaply (a pool of
        draws, each scaled by a per-call factor)."""
        pool = [self.draw(s) for s in self.seeds[:4]]
        rng = random.Random(seed)

        def inputs(i: int) -> list:
            scale = rng.uniform(0.75, 1.25)
            return [
                x * scale if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in pool[i % len(pool)]
            ]

        return inputs


def _swap_pairs(inputs: list, seed: int) -> list:
    gen = torch.Generator().manual_seed(seed)
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.numel() >= 2 * SWAPPED_PAIRS:
            x = x.clone()
            flat = x.view(-1) if x.is_contiguous() else x.reshape(-1)
            idx = torch.randperm(flat.numel(), generator=gen)[: 2 * SWAPPED_PAIRS]
            left, right = idx[:SWAPPED_PAIRS], idx[SWAPPED_PAIRS:]
            flat[left], flat[right] = flat[right].clone(), flat[left].clone()
            if not x.is_contiguous():
                x = flat.view(x.shape)
        out.append(x)
    return out
