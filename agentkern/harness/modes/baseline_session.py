"""Worker side of the torch.compile baseline (mode "baseline", parent side in baseline.py).

`agentkern bench` reports each kernel's speedup over torch.compile as well as over eager PyTorch. The
compiled model is judged exactly as a candidate is (its own runner process, the same blocks, fresh inputs
per call, the same flushes and modes: session.py), with the problem's Model under torch.compile in the
candidate's runner. It is agentkern's own code, so that runner is neither guarded nor confined:
torch.compile legitimately rewraps torch functions, starts compile workers and writes its cache (Inductor's,
in AGENTKERN_HOME/cache/inductor), and a candidate doing the same is rejected.
"""

from __future__ import annotations

from pathlib import Path

from agentkern.harness import correctness as C
from agentkern.harness.rejections import Rejected
from agentkern.harness.session import EvalSession


class BaselineSession(EvalSession):
    candidate_kind = "problem_compiled"
    confined = False

    def _candidate_source(self) -> str:
        return Path(self.req["problem_path"]).read_text()

    def _check_correctness(self) -> dict:
        """One trial (torch.compile compiles on the first call, under the compile limit), no fallback check:
        the compiled model computes with the reference's own ops, as it should."""
        from agentkern.harness.trials import TrialInputs

        self.phase.enter("compile")
        args = TrialInputs(self.problem, self.req["seeds"]).inputs(0)
        expected = self.sides["reference"].run_block([args], record=True)
        self.flops = float(expected.answer.get("flops", 0.0))
        got = self.sides["candidate"].run_block([args], expected.outputs)
        cmp = C.compare(got.outputs[0], expected.outputs[0], self._tolerance)
        if not cmp.ok:
            error = f"torch.compile(Model) disagrees with eager Model: {cmp.reason}"
            return {"status": "incorrect", "correct": False, "error": error}
        self._args0, self._out0 = args, expected.outputs[0]
        self.details["baseline"] = "torch.compile"
        self.phase.enter("run")
        return {"status": "ok", "correct": True, "error": None}

    def _rejected(self, rej: Rejected) -> dict:
        if rej.code == "timed_output_mismatch":
            error = f"torch.compile(Model) disagrees with eager Model while timed: {rej.message}"
            return {"status": "incorrect", "correct": False, "error": error, "details": self.details}
        return super()._rejected(rej)


def baseline_request(request: dict, phase) -> dict:
    """The sandboxed worker's "baseline" mode (agentkern/harness/worker.py MODES)."""
    return BaselineSession(request, phase).run()
