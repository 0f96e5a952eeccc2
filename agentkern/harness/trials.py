"""The inputs of the correctness trials and of the timed calls, made in the judge from the problem's
get_inputs() and seeds that never leave the judge.

Which trial gets what is inputs.py's plan: fresh draws; trials 1-3 reuse trial 0's values (swapped pairs,
a refill) to expose caches; from trial 4 on, transformed draws (scaled up and down, uniform, outliers) so
an approximation that only holds on the problem's own distribution fails. Every trial's inputs reach the
candidate at the same address (slot 0 of its arena), so a cache keyed on the pointer is exposed too.
Where the reference itself refuses a transformed input (a domain error), the trial falls back to the plain
draw: the reference defines the domain.
"""

from __future__ import annotations

import random

import torch

from agentkern.harness import inputs as plan


class TrialInputs:
    def __init__(self, problem, seeds: list[int]) -> None:
        self.problem = problem
        self.seeds = seeds
        self._made: dict[int, tuple[list, str | None, str]] = {}

    def draw(self, seed: int) -> list:
        torch.manual_seed(seed)
        return [x.detach().cpu() if isinstance(x, torch.Tensor) else x for x in self.problem.get_inputs()]

    def inputs(self, trial: int) -> list:
        return self._trial(trial)[0]

    def transform(self, trial: int) -> str | None:
        return self._trial(trial)[1]

    def describe(self, trial: int) -> dict:
        return {"inputs": self._trial(trial)[2]}

    def fall_back(self, trial: int, why: str) -> list:
        """The plain draw for a trial whose transformed inputs the reference refused."""
        name = self.transform(trial)
        self._made[trial] = (self.draw(self.seeds[trial]), None, plan.label(trial, notes=[f"{name} skipped: {why}"]))
        return self.inputs(trial)

    def _trial(self, trial: int) -> tuple[list, str | None, str]:
        if trial not in self._made:
            self._made[trial] = self._make(trial)
        return self._made[trial]

    def _make(self, trial: int) -> tuple[list, str | None, str]:
        seed = self.seeds[trial]
        fresh = self.draw(seed)
        gen = torch.Generator().manual_seed(seed)
        if trial in plan.REUSE:
            base = self.inputs(2 if trial == 3 else 0)  # trial 3 perturbs trial 2's refill, as trial 1 does trial 0
            first = [x.clone() if isinstance(x, torch.Tensor) else x for x in base]
            return plan.reuse_buffers(trial, first, fresh, gen), None, plan.label(trial)
        name = plan.transform_for(trial)
        if name is None:
            return fresh, None, plan.label(trial)
        transformed, notes = plan.apply(name, fresh, gen)
        if not any(a is not b for a, b in zip(transformed, fresh)):
            return fresh, None, plan.label(trial, notes=[f"{name} skipped: no input to transform", *notes])
        return transformed, name, plan.label(trial, name, notes)

    def timing_inputs(self, seed: int):
        """inputs(i) for the i-th timed call: a fresh get_inputs() draw under its own seed, every call. (A pool
        of draws rescaled per call is cheaper, but a kernel for a homogeneous op, relu(s*x) = s*relu(x), could
        answer a rescaled input from a cached one: tests/harness/attacks/knows_rescaled_pool.py.)"""
        rng = random.Random(seed)
        return lambda i: self.draw(rng.randrange(2**31))
