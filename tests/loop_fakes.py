"""Stand-ins for the policy and the harness in tests of the agent loop: drafts named by a counter, verdicts
made up from the order of evaluation (no model, no build, no timing)."""

from agentkern.types import EvalResult


class ListPolicy:
    """Proposes drafts named by a counter; the fake evaluator decides their speedups."""

    def __init__(self):
        self.n = 0

    def plan(self, ctx):
        return {"summary": f"plan {ctx['iteration']}", "strategy": "fake"}

    def write(self, plan, ctx, beam):
        drafts = []
        for _ in range(beam):
            self.n += 1
            drafts.append(
                {
                    "strategy": f"fam{self.n % 2}/v{self.n}",
                    "params": {"n": self.n},
                    "parent": None,
                    "source": f"# candidate {self.n}\nclass ModelNew: pass\n",
                    "error": None,
                }
            )
        return drafts


def is_retiming(options) -> bool:
    """Whether an evaluation is the confirm node's second one (loop/nodes/confirm.py: a longer time budget)."""
    from agentkern.types import EvalOptions

    return options.time_budget_s > EvalOptions().time_budget_s


class FakeEvaluate:
    """Speedups by evaluation order (None: incorrect; "suspicious": outputs matched at 50x, beyond the
    roofline); raises KeyboardInterrupt at call `interrupt_at` to simulate a kill. A candidate timed again
    once the search stops (loop/nodes/confirm.py: a longer time budget) gets `retimed[file name]` (a speedup,
    or None: incorrect this time) when given, else its first verdict; those calls go to `confirmations`."""

    def __init__(self, speedups, interrupt_at=None, retimed=None):
        self.speedups = list(speedups)
        self.calls = []
        self.confirmations = []
        self.retimed = dict(retimed or {})
        self.first = {}
        self.interrupt_at = interrupt_at

    def __call__(self, problem_path, path, target_name, options):
        if is_retiming(options):
            self.confirmations.append(path.name)
            if path.name in self.retimed:
                return self._verdict(self.retimed[path.name])
            return self.first[path.name]
        if self.interrupt_at is not None and len(self.calls) == self.interrupt_at:
            self.interrupt_at = None
            raise KeyboardInterrupt("killed mid-run")
        self.calls.append(path.name)
        s = self.speedups[(len(self.calls) - 1) % len(self.speedups)]
        self.first[path.name] = self._verdict(s)
        return self.first[path.name]

    @staticmethod
    def _verdict(s):
        if s is None:
            return EvalResult("incorrect", False, error="output differs", details={})
        if s == "suspicious":  # outputs matched, 50x: faster than the roofline even after re-measuring
            why = "0.02 ms beats the cpu roofline bound of 0.1 ms (memory-bound) by more than the 10% margin"
            return EvalResult(
                "suspicious",
                False,
                speedup=50.0,
                reference_ms=1.0,
                kernel_ms=0.02,
                roofline_fraction=5.0,
                error=f"{why}: a timing error or a cheat, not a result",
                details={"bound": "memory", "timing": {}, "suspicious": why, "outputs_matched": True},
            )
        return EvalResult(
            "ok",
            True,
            speedup=s,
            reference_ms=1.0,
            kernel_ms=1.0 / s,
            roofline_fraction=0.1 * s,
            details={"bound": "memory", "timing": {}},
        )
