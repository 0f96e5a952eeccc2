"""Worker side of the torch.compile baseline (mode "baseline", parent side in baseline.py).

`agentkern bench` reports each kernel's speedup over torch.compile as well as over eager PyTorch. The
compiled model is timed exactly as a candidate is (same process, interleaved with eager, fresh inputs per
call, the same flushes and modes: EvalSession._time), but it is agentkern's own code, so it runs without
the anti-cheat guards: torch.compile legitimately rewraps torch functions (torch.manual_seed), starts
compile workers and writes its cache, and a candidate doing the same is rejected (patches_runtime). The
guards stay on for every candidate; this mode never loads a solution file.
"""

from __future__ import annotations

import secrets

import torch

from agentkern.harness import correctness as C
from agentkern.harness.rejections import Rejected
from agentkern.harness.session import EvalSession, perf_clock


class _Unguarded:
    """Stands in for the audit hook and the runtime snapshot (trusted code: nothing to watch)."""

    active = False

    def check(self) -> None:
        pass


class BaselineSession(EvalSession):
    def _load(self) -> None:
        from agentkern.harness.loading import load_problem_module

        t0 = perf_clock()
        self.problem = load_problem_module(
            self.req["problem_path"], f"_reference_{secrets.token_hex(8)}", self.req.get("size")
        )
        self.audit = self.snapshot = _Unguarded()
        init_inputs = self.problem.get_init_inputs()
        torch.manual_seed(self.req["seeds"][0])
        self.reference = self.problem.Model(*init_inputs).to(self.device).eval()
        torch.manual_seed(self.req["seeds"][0])  # same parameters as the eager reference
        eager_copy = self.problem.Model(*init_inputs).to(self.device).eval()
        self.candidate = torch.compile(eager_copy)
        self.timings["load_problem_s"] = perf_clock() - t0

    def run(self) -> dict:
        from agentkern.harness.device_lock import building, timing_lock

        self.phase.enter("compile")
        # torch.compile compiles on the first call: under the compile time limit, and never timed; beside
        # other builds, never beside a measurement (device_lock.py).
        with building(self.device):
            self._load()
            t1 = perf_clock()
            inputs = self._inputs(self.req["seeds"][0])
            with torch.no_grad():
                expected = C.as_tensor_list(self.reference(*self._clone(inputs)), "the reference")
                got = C.as_tensor_list(self.candidate(*self._clone(inputs)), "torch.compile(Model)")
            self._sync()
            self.timings["compile_s"] = perf_clock() - t1
        with self._queued_for(timing_lock):
            return self._compare_and_time(expected, got)

    def _compare_and_time(self, expected, got) -> dict:
        self.phase.enter("run")
        cmp = C.compare(got, expected, self._tolerance)
        if not cmp.ok:
            return {
                "status": "incorrect",
                "correct": False,
                "details": self.details,
                "error": f"torch.compile(Model) disagrees with eager Model: {cmp.reason}",
            }
        result = {"status": "ok", "correct": True, "error": None, "details": self.details}
        self.details["work"] = self._work()
        self.details["baseline"] = "torch.compile"
        if self.req["timing"] == "measure":
            try:
                timing = self._in_phase("timing", "timing_s", self._time)
            except Rejected as rej:  # only timed_output_mismatch can come from here
                return {
                    "status": "incorrect",
                    "correct": False,
                    "details": self.details,
                    "error": f"torch.compile(Model) disagrees with eager Model while timed: {rej.message}",
                }
            self._with_timing(result, timing)
        self.details["phases"] = self.timings
        return result


def baseline_request(request: dict, phase) -> dict:
    """The sandboxed worker's "baseline" mode (agentkern/harness/worker.py MODES)."""
    return BaselineSession(request, phase).run()
