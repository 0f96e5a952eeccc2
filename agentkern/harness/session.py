"""One evaluation inside the worker: load, check correctness with every guard armed, then time.

The order matters. The reference runs first on its own copy of the inputs; its output is copied, then
poisoned and freed before the candidate runs, so a candidate that returns stale memory shows the poison
instead of the answer. Comparison functions and timers were bound before the candidate was imported.
"""

from __future__ import annotations

import contextlib
import random
import secrets
import time

import torch

from agentkern.harness import correctness as C
from agentkern.harness import inputs as trial_inputs
from agentkern.harness.fallback import OpRecorder, check_fallback
from agentkern.harness.guards import AuditGuard, RuntimeSnapshot, ThreadWatch
from agentkern.harness.rejections import Rejected
from agentkern.harness.timing import measure_interleaved

_sleep = time.sleep
perf_clock = time.perf_counter  # bound before candidate code runs (a candidate may patch time)


def _settle_torch() -> None:
    """Let torch finish its lazy set-up before the runtime snapshot, so that what it rewraps on first use
    (if torch._dynamo gets imported, torch.manual_seed is replaced) is not taken for a candidate's patch."""
    x = torch.ones(2, 2)
    with OpRecorder():
        torch.mm(x, x)


class EvalSession:
    def __init__(self, request: dict, phase) -> None:
        self.req = request
        self.phase = phase
        self.opts = request["options"]
        self.device = torch.device(request["device"])
        self.details: dict = {"backend": request["backend"], "device": request["device"], "seeds": request["seeds"]}
        self.timings: dict[str, float] = {}
        if self.opts.get("threads"):
            torch.set_num_threads(int(self.opts["threads"]))
        self.details["threads"] = torch.get_num_threads()

    # ---- loading -------------------------------------------------------------------------------------
    def _load(self):
        from agentkern.harness.loading import load_module, load_problem_module

        t0 = perf_clock()
        # Registered under a name nobody can guess: a plain `import` must not hand the candidate the reference.
        self.problem = load_problem_module(
            self.req["problem_path"], f"_reference_{secrets.token_hex(8)}", self.req.get("size")
        )
        _settle_torch()
        self.snapshot = RuntimeSnapshot()
        self.audit = AuditGuard(self.req["solution_path"])
        self.phase.enter("compile")
        self.audit.active = True
        t1 = perf_clock()
        solution = load_module(self.req["solution_path"], "agentkern_candidate")
        init_inputs = self.problem.get_init_inputs()
        torch.manual_seed(self.req["seeds"][0])
        self.reference = self.problem.Model(*init_inputs).to(self.device).eval()
        torch.manual_seed(self.req["seeds"][0])
        self.candidate = solution.ModelNew(*init_inputs).to(self.device).eval()
        self.audit.active = False
        self.timings["load_problem_s"] = t1 - t0
        self.timings["compile_s"] = perf_clock() - t1
        self.audit.check()
        self.snapshot.check()

    # ---- inputs --------------------------------------------------------------------------------------
    def _inputs(self, seed: int) -> list:
        torch.manual_seed(seed)
        return [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in self.problem.get_inputs()]

    @staticmethod
    def _clone(inputs: list) -> list:
        return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]

    def _tolerance(self, dtype: torch.dtype) -> float:
        return float(self.opts["tolerances"].get(str(dtype).removeprefix("torch."), 1e-4))

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    # ---- one guarded candidate call ------------------------------------------------------------------
    def _call_candidate(self, args: list, recorder: OpRecorder, first_calls: bool) -> list:
        watch = ThreadWatch()
        watch.before()
        self.audit.active = True
        try:
            with torch.no_grad(), recorder:
                out = self.candidate(*args)
                self._sync()
        finally:
            self.audit.active = False
        self.audit.check()
        self.snapshot.check()
        outputs = C.as_tensor_list(out, "ModelNew.forward")
        watch.after(allow_native_growth=first_calls)
        if self.device.type == "cuda" and torch.cuda.current_stream(self.device) != torch.cuda.default_stream(
            self.device
        ):
            raise Rejected("side_stream", "left a non-default CUDA stream current after the call")
        return outputs

    # ---- correctness ---------------------------------------------------------------------------------
    def _check_correctness(self) -> dict:
        seeds = self.req["seeds"]
        ref_recorder, cand_recorder = OpRecorder(), OpRecorder()
        history: list[tuple[list, list, list]] = []  # (expected, outputs, snapshot of outputs) per trial
        first_inputs = None
        max_diff = 0.0
        labels = self.details["trial_inputs"] = []
        for trial, seed in enumerate(seeds):
            cand_args, transform, label = self._trial_inputs(trial, seed, first_inputs)
            first_inputs = first_inputs or cand_args
            # The reference goes last before the candidate, so the blocks it frees (poisoned) are the
            # ones an allocator hands the candidate next.
            cand_args, pristine, expected, fallback = self._expected(trial, seed, cand_args, transform, ref_recorder)
            labels.append(fallback or label)
            outputs = self._call_candidate(cand_args, cand_recorder, first_calls=trial < 2)
            taken = C.snapshot(outputs)
            self._check_protocol(outputs, cand_args, pristine)
            cmp = C.compare(taken, expected, self._tolerance)
            if not cmp.ok:
                self._explain_mismatch(taken, [h[0] for h in history])
                self.details["failed_trial"] = {"trial": trial, "seed": seed, "inputs": labels[-1]}
                return {"status": "incorrect", "correct": False, "error": cmp.reason}
            max_diff = max(max_diff, cmp.max_abs_diff or 0.0)
            history.append((expected, outputs, taken))
        self._check_after_return(history)
        check_fallback(ref_recorder.compute_families(), cand_recorder.compute_families())
        self.details["reference_ops"] = sorted(ref_recorder.ops)
        self.details["candidate_ops"] = sorted(cand_recorder.ops)
        self.details["max_abs_diff"] = max_diff
        self.details["trials"] = len(seeds)
        return {"status": "ok", "correct": True, "error": None}

    def _trial_inputs(self, trial: int, seed: int, first: list | None) -> tuple[list, str | None, str]:
        """(inputs, transform, label) for a trial: a fresh draw, trial 0's buffers refilled or perturbed
        (trials 1-3), or a transformed fresh draw (trials 4 on); see inputs.py."""
        fresh = self._inputs(seed)
        gen = torch.Generator().manual_seed(seed)
        if first is not None and trial in trial_inputs.REUSE:
            return trial_inputs.reuse_buffers(trial, first, fresh, gen), None, trial_inputs.label(trial)
        name = trial_inputs.transform_for(trial)
        if name is None:
            return fresh, None, trial_inputs.label(trial)
        transformed, notes = trial_inputs.apply(name, fresh, gen)
        if not any(a is not b for a, b in zip(transformed, fresh)):
            return fresh, None, trial_inputs.label(trial, notes=[f"{name} skipped: no input to transform", *notes])
        return transformed, name, trial_inputs.label(trial, name, notes)

    def _expected(self, trial: int, seed: int, args: list, transform: str | None, recorder: OpRecorder):
        """(args, a pristine copy of them, the reference's answer, a label if the trial fell back). Where the
        reference refuses a transformed input (a probability scaled past 1, a domain error), the trial falls
        back to the plain draw: the reference defines the domain. The copy is taken before the reference
        runs, so nothing is allocated between its poisoned frees and the candidate's call."""
        pristine = self._clone(args)
        try:
            return args, pristine, self._reference_answer(args, recorder), None
        except Exception as exc:  # noqa: BLE001 - the reference is trusted; any refusal means "out of domain"
            if transform is None:
                raise
            args = self._inputs(seed)
            pristine = self._clone(args)
            note = f"{transform} skipped: the reference raised {type(exc).__name__}"
            return args, pristine, self._reference_answer(args, recorder), trial_inputs.label(trial, notes=[note])

    def _reference_answer(self, args: list, recorder: OpRecorder) -> list:
        """Run the reference on its own copy; keep a copy of its output, poison the original and free it."""
        ref_args = self._clone(args)
        with torch.no_grad(), recorder:
            ref_out = C.as_tensor_list(self.reference(*ref_args), "the reference")
        self._sync()
        expected = C.snapshot(ref_out)
        C.poison(ref_out)
        C.poison([a for a in ref_args if isinstance(a, torch.Tensor)])
        C.poison_free_blocks(ref_out)
        return expected

    def _check_protocol(self, outputs: list, args: list, pristine: list) -> None:
        for out in outputs:
            stale = C.poisoned_fraction(out)
            if stale > 0.5:
                raise Rejected(
                    "reuses_reference_output",
                    f"{stale:.0%} of its output is memory it never wrote: freed blocks the reference used, poisoned by the harness",
                )
            for arg in args:
                if isinstance(arg, torch.Tensor) and C.overlaps(out, arg):
                    raise Rejected("aliases_input", "its output shares memory with an input")
        for i, (now, before) in enumerate(zip(args, pristine)):
            if isinstance(now, torch.Tensor) and not C.same_bits(now, before):
                raise Rejected("mutates_inputs", f"input {i} was modified by the call")

    def _explain_mismatch(self, taken: list, earlier_answers: list) -> None:
        """A wrong answer that equals an earlier call's answer is a cache, not a bug."""
        for expected in earlier_answers:
            if C.compare(taken, expected, self._tolerance).ok:
                raise Rejected("caches_results", "returned the answer of an earlier call for new inputs")

    def _check_after_return(self, history: list) -> None:
        """Outputs must not change after the call returned, nor be overwritten by a later call."""
        _sleep(0.01)
        self._sync()
        for trial, (_, outputs, taken) in enumerate(history):
            for out, snap in zip(outputs, taken):
                if not C.same_bits(out, snap):
                    if trial < len(history) - 1:
                        raise Rejected(
                            "caches_results",
                            f"the output of call {trial} was overwritten by a later call (one buffer reused across calls)",
                        )
                    code = "side_stream" if self.device.type == "cuda" else "background_work"
                    raise Rejected(code, "its output kept changing after the call returned")

    # ---- roofline inputs -----------------------------------------------------------------------------
    def _work(self) -> dict:
        inputs = self._inputs(self.req["seeds"][0])
        with torch.no_grad(), OpRecorder() as counter:
            out = C.as_tensor_list(self.reference(*inputs), "the reference")
        params = list(self.reference.parameters()) + list(self.reference.buffers())
        moved = sum(t.numel() * t.element_size() for t in [*inputs, *out, *params] if isinstance(t, torch.Tensor))
        floating = [t for t in out if t.is_floating_point()] or out
        return {
            "flops": float(counter.flops),
            "bytes": float(moved),
            "dtype": str(floating[0].dtype).removeprefix("torch."),
        }

    # ---- timing --------------------------------------------------------------------------------------
    def _time(self) -> dict:
        pool = [self._inputs(seed) for seed in self.req["seeds"][:4]]
        rng = random.Random(self.req["timing_seed"])

        def fresh_inputs(i: int):
            # New memory and new values on every call, cheaply: a pool input scaled by a per-call factor.
            base = pool[i % len(pool)]
            scale = rng.uniform(0.75, 1.25)
            ref_args = [
                x * scale
                if isinstance(x, torch.Tensor) and x.is_floating_point()
                else (x.clone() if isinstance(x, torch.Tensor) else x)
                for x in base
            ]
            return ref_args, self._clone(ref_args)

        recent: list[list] = []

        def check_output(ref_out, cand_out, i: int) -> None:
            expected = C.as_tensor_list(ref_out, "the reference")
            got = C.as_tensor_list(cand_out, "ModelNew.forward")
            cmp = C.compare(got, expected, self._tolerance)
            if not cmp.ok:
                self._explain_mismatch(got, recent)
                raise Rejected("timed_output_mismatch", f"timed call {i}: {cmp.reason}")
            recent[:] = [expected, *recent[:2]]

        def reference(*args):
            with torch.no_grad():
                return self.reference(*args)

        def candidate(*args):
            with torch.no_grad():
                return self.candidate(*args)

        self.audit.active = True
        try:
            ref, cand = measure_interleaved(
                reference,
                candidate,
                fresh_inputs,
                check_output,
                device=self.device,
                mode=self.opts["mode"],
                time_budget_s=self.opts["time_budget_s"],
                min_calls=self.opts["min_timed_calls"],
                max_calls=self.opts["max_timed_calls"],
                flush_bytes=self.req["flush_bytes"],
                rng=rng,
            )
        finally:
            self.audit.active = False
        self.audit.check()
        self.snapshot.check()
        return {"reference": ref.summary(), "kernel": cand.summary(), "mode": self.opts["mode"]}

    # ---- the whole evaluation ------------------------------------------------------------------------
    def run(self) -> dict:
        """Load (build) and check correctness beside other evaluations, then time the candidate with the
        device to itself (device_lock.py): a measurement never shares the cores or the GPU with another
        evaluation's build, check or measurement. Waiting for the device is its own phase ("queued"), not
        counted against the run limit."""
        from agentkern.harness.device_lock import building, checking, timing_lock

        t0 = perf_clock()
        try:
            with building(self.device):
                self._load()
        except Rejected as rej:
            return self._rejected(rej)
        try:
            with self._queued_for(checking):
                verdict = self._in_phase("run", "correctness_s", self._check_correctness)
            result = {**verdict, "details": self.details}
            self.details["work"] = self._work()
            if verdict["correct"] and self.req["timing"] == "measure" and self.opts["check_timing"]:
                with self._queued_for(timing_lock):
                    timing = self._in_phase("timing", "timing_s", self._time)
                return self._with_timing(result, timing)
            if verdict["correct"]:
                self.details["timing"] = {"unavailable": self.req["timing"]}
            return result
        except Rejected as rej:
            return self._rejected(rej)
        finally:
            self.timings["worker_total_s"] = perf_clock() - t0
            self.details["phases"] = self.timings

    @contextlib.contextmanager
    def _queued_for(self, lock):
        """Hold `lock` on the device for the block. The wait for it is phase "queued checking" or "queued
        timing" (the sandbox does not count either against the run limit), summed in queued_s."""
        self.phase.enter(f"queued {lock.__name__.removesuffix('_lock')}")
        waited = perf_clock()
        with lock(self.device):
            self.timings["queued_s"] = self.timings.get("queued_s", 0.0) + perf_clock() - waited
            yield

    def _in_phase(self, phase: str, key: str, work):
        """work() in phase `phase`, its duration in timings[key]."""
        self.phase.enter(phase)
        started = perf_clock()
        value = work()
        self.timings[key] = perf_clock() - started
        return value

    def _with_timing(self, result: dict, timing: dict) -> dict:
        self.details["timing"] = timing
        result["reference_ms"] = timing["reference"]["median_ms"]
        result["kernel_ms"] = timing["kernel"]["median_ms"]
        result["speedup"] = result["reference_ms"] / result["kernel_ms"] if result["kernel_ms"] > 0 else None
        return result

    def _rejected(self, rej: Rejected) -> dict:
        self.details["rejected_because"] = rej.code
        return {"status": "rejected", "correct": False, "error": f"{rej.code}: {rej.message}", "details": self.details}


def evaluate_request(request: dict, phase) -> dict:
    """The sandboxed worker's default mode (agentkern/harness/worker.py MODES): judge one candidate."""
    return EvalSession(request, phase).run()
