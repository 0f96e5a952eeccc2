"""The judge's two sides, the reference and the candidate: each a runner process, commanded the same way.

A Side turns a runner's answers into what the judge needs: outputs read from the frozen runner, the time
of a block of calls on the judge's clock, and the candidate's failures as verdicts (an exception it
raised, a rejection by its in-process guards, a process it left running, its death). The reference's
failures are the problem's: they end the evaluation as an error about the problem.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from agentkern.harness.rejections import Rejected
from agentkern.harness.runners import RunnerDied, RunnerProcess
from agentkern.helpers import one_line, tail


def _killer(sig: int) -> str:
    """Who sent the signal a runner died of (SIGKILL and SIGTERM never get here: the judge takes them over)."""
    import signal

    return "kernel (file-size limit)" if sig == signal.SIGXFSZ else "itself (its own crash)"


class CandidateFailed(Exception):
    """The candidate raised, crashed or broke the protocol: a verdict, not an internal error."""

    def __init__(self, status: str, error: str, details: dict | None = None) -> None:
        super().__init__(error)
        self.status, self.error, self.details = status, error, details or {}


class ReferenceFailed(Exception):
    """The problem's own Model or get_inputs failed: the problem is broken, not the candidate."""


@dataclass
class Block:
    outputs: list[list[torch.Tensor]]  # per call, per output
    seconds: float  # thaw to stop, on the judge's clock
    answer: dict


class Side:
    def __init__(self, role: str, scratch: Path, env: dict[str, str], log_path: Path, confined: bool = True) -> None:
        self.role = role
        self.runner = RunnerProcess(role, scratch, env, log_path, confined)
        self.scratch = scratch
        self.device_outputs = None  # device_outputs.DeviceOutputs, on a GPU

    @property
    def is_candidate(self) -> bool:
        return self.role == "candidate"

    def wait_ready(self) -> None:
        from agentkern.harness.native_check import mapped_libraries

        if self.runner.pid is not None:
            return  # started by a spare worker, ready long ago
        try:
            self.runner.wait_ready()
        except RunnerDied as exc:
            raise ReferenceFailed(f"the {self.role} runner did not start: {self._log()}") from exc
        self.libraries_at_start = mapped_libraries(self.runner.pid)

    def cap_file_size(self, limit_bytes: int | None) -> None:
        """The runner's file-size limit, soft and hard, set from outside (a spare's runners started before the
        request said the limit): no file it writes, its log included, grows past it."""
        import resource

        if limit_bytes:
            try:
                resource.prlimit(self.runner.pid, resource.RLIMIT_FSIZE, (int(limit_bytes), int(limit_bytes)))
            except (OSError, ValueError):
                pass  # the limit it inherited from the judge stands

    def alive(self) -> bool:
        return self.runner.proc.poll() is None

    def check_native(self) -> None:
        """The candidate's runner loaded no compute library and no library calling one (native_check.py)."""
        from agentkern.harness.native_check import check_libraries, mapped_libraries

        if self.is_candidate:
            check_libraries(mapped_libraries(self.runner.pid) - self.libraries_at_start)

    def ask(self, cmd: dict, loading: bool = False, fence=None) -> tuple[dict, float]:
        """Send one command; its answer and time, or the failure it stands for."""
        try:
            answer, seconds = self.runner.call(cmd, fence)
        except RunnerDied as exc:
            self._died(exc, loading)
        if "rejected" in answer:
            code, message = (list(answer["rejected"]) + ["", ""])[:2]
            if self.is_candidate:
                from agentkern.harness.rejections import REASONS

                code = str(code)[:64]
                if code not in REASONS:  # its guards name only known codes: anything else is made up
                    raise Rejected("protocol", f"the candidate's process claims an unknown rejection {code!r}")
                raise Rejected(code, one_line(str(message)[:500]))
            raise ReferenceFailed(f"the reference was rejected by a guard: {code}: {message}")
        if "raised" in answer:
            self._raised(answer["raised"], loading)
        return answer, seconds

    def _died(self, exc: RunnerDied, loading: bool):
        import os
        import signal

        from agentkern.harness.deaths import LOST_SIGNALS

        how = self.runner.exit_description()
        sig = self.runner.exit_signal()
        if sig in LOST_SIGNALS:
            # Killed from outside the runner (the OOM killer, an operator, the candidate's own kill): the
            # judge goes the same way, so that agentkern's watchdog tells who it was, from the OOM counters and
            # the memory it sampled, and the executors retry a lost evaluation (deaths.py).
            os.kill(os.getpid(), sig)
        if not self.is_candidate:
            raise ReferenceFailed(f"the reference's process {how}: {self._log()}") from exc
        where = "while loading" if loading else "while called"
        details = {"log_tail": self._log()}
        if sig is not None:
            details["killed_by"] = _killer(sig)
        if sig == signal.SIGXFSZ:
            import resource

            limit_mib = resource.getrlimit(resource.RLIMIT_FSIZE)[0] / 2**20
            raise CandidateFailed(
                "crashed", f"exceeded the file-size limit of {limit_mib:g} MiB (wrote too much output) {where}", details
            ) from exc
        last = one_line(details["log_tail"].strip().splitlines()[-1]) if details["log_tail"].strip() else ""
        error = f"the candidate's process {how} {where}" + (f": {last[:300]}" if last and sig is None else "")
        raise CandidateFailed("crashed", error, details) from exc

    def _raised(self, raised: dict, loading: bool):
        raised = raised if isinstance(raised, dict) else {}
        error = one_line(f"{raised.get('type', 'Exception')}: {raised.get('message', '')}"[:2000])
        if not self.is_candidate:
            raise ReferenceFailed(f"the reference raised {error}")
        status = "compile_error" if loading and raised.get("compile_failure") else "runtime_error"
        raise CandidateFailed(status, error, {"traceback": tail(str(raised.get("traceback", "")))})

    def _log(self) -> str:
        from agentkern.harness.deaths import read_tail

        return tail(read_tail(self.runner.log_path))

    # ---- calls ---------------------------------------------------------------------------------------
    def load(self, kind: str, source: str, init: list, init_seed: int, common: dict) -> dict:
        specs = self.runner.arena.write([init])[0]
        filename = self.runner.inside / ("problem.py" if kind.startswith("problem") else "solution.py")
        cmd = {"op": "load", "kind": kind, "source": source, "filename": str(filename), "init": specs}
        self._use_device(torch.device(common["device"]))
        guarded = self.is_candidate and kind == "solution"  # the torch.compile baseline is agentkern's own code
        cmd |= {"init_seed": init_seed, "arena_size": self.runner.arena.size, "guarded": guarded}
        if guarded:
            from agentkern.harness.op_observer import library

            observer = library()  # built here, by the judge; None: the timed blocks keep the Python mode
            cmd["observer"] = str(observer) if observer is not None else None
        answer, _ = self.ask(cmd | common, loading=True)
        left = self.runner.others()
        if left and self.is_candidate:
            raise Rejected("forbidden_call", f"loading left {len(left)} process(es) running")
        self.check_native()
        return answer

    def _use_device(self, device: torch.device) -> None:
        """On a GPU, inputs and outputs live in the judge's device memory, mapped by the runner (cuda_ipc.py)."""
        if device.type == "cuda" and self.device_outputs is None:
            from agentkern.harness.device_outputs import DeviceOutputs

            self.runner.arena.use_device(device)
            self.device_outputs = DeviceOutputs(self.role, device, self._protocol)

    def _device_fields(self, expected) -> dict:
        on_device = self.runner.arena.device_spec()
        if on_device is None or self.device_outputs is None:
            return {}
        return {"device_inputs": on_device, **self.device_outputs.plan(expected)}

    def run_block(self, calls: list[list], expected: list[list[torch.Tensor]] | None = None, **flags) -> Block:
        """Call the model once per entry of `calls` (each a list of arguments), timed as one block."""
        specs = self.runner.arena.write(calls)
        cmd = {"op": "block", "calls": specs, "arena_size": self.runner.arena.size, **flags}
        cmd |= self._device_fields(expected)
        answer, seconds = self._timed_ask(cmd)
        if self.device_outputs is not None:
            self.device_outputs.release_retired()
        left = self.runner.others()
        if left and self.is_candidate:
            raise Rejected("forbidden_call", f"the call left {len(left)} process(es) running")
        described = answer.get("outputs")
        if not isinstance(described, list) or len(described) != len(calls):
            raise self._protocol("did not describe one list of outputs per call")
        if self.is_candidate and flags.get("watch"):
            self._check_not_inputs(described)
        outputs = []
        for i, outs in enumerate(described):
            if not isinstance(outs, list) or len(outs) > 64:
                raise self._protocol("described its outputs in a form it cannot have")
            like = expected[i] if expected is not None else None
            if like is not None and len(outs) != len(like):
                outputs.append([torch.empty(0)] * len(outs))  # the comparison says how many were expected
                continue
            outputs.append([self._read(d, like[j] if like else None) for j, d in enumerate(outs)])
        if "device_outputs" in cmd:
            self.device_outputs.verify()
        return Block(outputs, seconds, answer)

    def _read(self, desc, expected: torch.Tensor | None) -> torch.Tensor:
        if isinstance(desc, dict) and "device_offset" in desc and self.device_outputs is not None:
            return self.device_outputs.read(desc, expected)
        return self.runner.read_tensor(desc, expected)

    def plan_call(self, inputs: list[dict]) -> dict:
        """One call on empty tensors of these shapes ({"shape", "dtype"} or {"value"}), its Triton launches noted
        and not run (gpu_plan.py); the answer (its outputs are garbage and never read)."""
        call = [dict(x, empty=True) if "shape" in x else x for x in inputs]
        cmd = {"op": "block", "calls": [call], "arena_size": self.runner.arena.size, "plan": True}
        answer, _ = self.ask(cmd)
        return answer

    def _check_not_inputs(self, described: list) -> None:
        ranges = self.runner.arena_ranges()
        for outs in described:
            for desc in outs if isinstance(outs, list) else []:
                addr = desc.get("addr") if isinstance(desc, dict) else None
                if isinstance(addr, int) and any(lo <= addr < hi for lo, hi in ranges):
                    raise Rejected("aliases_input", "its output shares memory with an input")

    def inputs_unchanged(self, calls: list[list]) -> int | None:
        """The index of the first input the last block modified in the arena, or None."""
        specs, _ = self.runner.arena.layout(calls)
        for call, args in zip(specs, calls):
            for i, (spec, x) in enumerate(zip(call, args)):
                if "offset" in spec and spec["nbytes"]:
                    original = x.detach().cpu().contiguous().view(-1).view(torch.uint8)
                    if not torch.equal(self.runner.arena.current(spec), original):
                        return i
        return None

    def check_guards(self, first: bool) -> None:
        """The candidate's in-process guards, after a block (outside any timed window)."""
        self.ask({"op": "check", "first": first})

    def dry_block_seconds(self, calls: list[list], repeats: int, expected: list[list] | None = None) -> list[float]:
        """`repeats` blocks of these calls that do everything but call the model: what the handshake and the
        protocol cost (thaw, the command, the inputs' views, the answer, stop; on a GPU also copying `expected`'s
        bytes into the output region and the judge's fence over it). The inputs are written once. Asked of the
        reference's runner only."""
        specs = self.runner.arena.write(calls)
        cmd = {"op": "block", "calls": specs, "arena_size": self.runner.arena.size, "dry": True}
        dry_outputs = os.environ.get("AGENTKERN_GPU_DRY_OUTPUTS", "1") != "0"  # 0: measure the old way
        cmd |= self._device_fields(expected if dry_outputs else None)
        return [self._timed_ask(cmd)[1] for _ in range(repeats)]

    def _timed_ask(self, cmd: dict) -> tuple[dict, float]:
        """A block's command, timed: on a GPU, the device is brought to its working clocks first (gpu_clocks.py)
        and the judge's read of the output region is the fence before the clock stops."""
        if self.device_outputs is not None:
            from agentkern.harness import gpu_clocks

            gpu_clocks.warm(self.device_outputs.device)
        fence = self.device_outputs.fence if "device_outputs" in cmd else None
        return self.ask(cmd, fence=fence)

    def _protocol(self, what: str) -> Exception:
        if self.is_candidate:
            return Rejected("protocol", f"the candidate's process {what}")
        return ReferenceFailed(f"the reference's process {what}")

    def close(self) -> None:
        self.runner.close()
        if self.device_outputs is not None:
            self.device_outputs.close()
