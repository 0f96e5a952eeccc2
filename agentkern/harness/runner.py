"""A runner: the process that holds one model, the reference or the candidate, and calls it when told.

`python -m agentkern.harness.runner REPLY_FD ARENA_FD`, started by the judge (runners.py), confined by
bubblewrap where it is available (confine.py). It reads one JSON command per line on stdin and answers one
JSON line on REPLY_FD; its stdout and stderr go to a capped log. The judge runs two of them with this same
code, so both sides are loaded, called and timed the same way.

Everything here runs in a process the candidate controls, and the judge believes none of it except a
rejection (the guards below are defence in depth: a candidate that disarms them gains nothing, because
inputs, the reference, the comparison and the clock live in other processes). Commands:
- {"op": "load", ...}: write the source to the scratch folder, import it, build Model/ModelNew(*init);
- {"op": "block", "calls": [...]}: call the model once per call on inputs from the shared arena, keep the
  outputs alive and answer with their addresses (the judge reads them from this process's memory while it
  is frozen), and the aten ops dispatched when asked to record them; with "float64" (the reference's
  runner only) a float64 copy of the model is called on the inputs in float64: the exact answer the judge
  asks for where a candidate's differs from the reference's (session.py);
- {"op": "check"}: run the guards' checks (after a block, outside any timed window);
- {"op": "quit"}.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

REPLY_LIMIT = 1 << 20  # the judge reads at most this much of one answer


class Runner:
    def __init__(self, reply_fd: int, arena_fd: int) -> None:
        from agentkern.harness.arena import Mapping

        self.reply = os.fdopen(reply_fd, "w", buffering=1)
        self.mapping = Mapping(arena_fd)
        self.model = None
        self.model64 = None  # the reference's float64 copy, made when the judge first asks for an exact answer
        self.device = None
        self.guards = None
        self.observer = None  # op_observer.Observer, in a guarded runner where the judge built it
        self.kept: list = []
        self.records_launches = False
        self.device_buffers = None  # cuda_ipc.OpenedBuffers: the judge's device memory, on a GPU
        self.outputs_region = None  # this block's output region in it

    def answer(self, message: dict) -> None:
        self.reply.write(json.dumps(message) + "\n")
        self.reply.flush()

    # ---- commands ------------------------------------------------------------------------------------
    def load(self, cmd: dict) -> dict:
        import torch

        from agentkern.harness.loading import load_module, load_problem_module

        path = Path(cmd["filename"]).resolve()
        path.write_text(cmd["source"])
        self.device = torch.device(cmd["device"])
        if self.device.type == "cuda":
            # The context exists before the guards' snapshot: creating it rebinds torch.cuda's state flags.
            torch.cuda.init()
            torch.empty(1, device=self.device)
        if cmd.get("threads"):
            torch.set_num_threads(int(cmd["threads"]))
        self.mapping.ensure(cmd["arena_size"])
        init = [x.clone() if isinstance(x, torch.Tensor) else x for x in self.mapping.args(cmd["init"])]
        if cmd["guarded"] and self.guards is None:  # a second load (a second shape) keeps the first's guards
            from agentkern.harness.runner_guards import Guards

            self.observer = self._observer(cmd.get("observer"))  # before the candidate's code is imported
            self.guards = Guards(str(path))
        self._begin(watch=False)
        try:
            if cmd["kind"] == "solution":
                from agentkern.harness import launch_record

                self.records_launches = launch_record.install()  # Triton's interpreter: note each launch
                cls = load_module(str(path), "agentkern_candidate").ModelNew
            else:
                module = load_problem_module(str(path), "agentkern_reference", cmd.get("size"))
                if cmd.get("constants"):  # a second shape or a check size (second_shape.py, check_size.py)
                    from agentkern.harness.second_shape import set_constants

                    set_constants(module, cmd["constants"])
                cls = module.Model
            torch.manual_seed(int(cmd["init_seed"]))
            self.model = cls(*init).to(self.device).eval()
            self.model64 = None  # a second load (a second shape) makes its own
            if cmd["kind"] == "problem_compiled":  # the torch.compile baseline (bench): trusted, unguarded
                self.model = torch.compile(self.model)
        finally:
            self._end()
        if self.guards is not None:
            self.guards.check(first=True)
        params = [*self.model.parameters(), *self.model.buffers()]
        loaded = {"loaded": True, "threads": torch.get_num_threads(), "param_bytes": sum(p.nbytes for p in params)}
        return loaded | {"observer": self.observer is not None}

    @staticmethod
    def _observer(path):
        """The op observer (op_observer.py) from the library the judge built, or None (the mode then covers
        the timed blocks too)."""
        if not path:
            return None
        from agentkern.harness.op_observer import Observer

        try:
            return Observer(str(path))
        except OSError:
            return None

    def block(self, cmd: dict) -> dict:
        """Call the model once per call. The candidate's (guarded) calls run under the op allowlist: in the
        trials a Python dispatch mode costing it 3-8 us per aten op (measured: docs/harness.md), in timed blocks
        the op observer (~0.2 us) where it was built, else the mode again; the reference's record their ops and
        FLOPs in the trials and run bare when timed, as in a user's model (a mode there too would charge the
        reference for every op it dispatches, most often more ops than a kernel's, and flatter the kernel)."""
        import contextlib

        from agentkern.harness import allowlist
        from agentkern.harness.fallback import OpRecorder

        self.kept = []
        self.mapping.ensure(cmd["arena_size"])
        # The observer notes the ops of every guarded block: a trial's become what a timed block may dispatch.
        observer = self.observer if self.guards is not None and not cmd.get("plan") else None
        if self.guards is not None and observer is not None and not cmd.get("record"):
            mode = contextlib.nullcontext()  # a timed block: the observer alone
        elif self.guards is not None:
            mode = allowlist.AllowlistMode()
        elif cmd.get("record"):
            mode = OpRecorder()
        else:
            mode = contextlib.nullcontext()
        inputs, self.outputs_region = self._device_memory(cmd)  # before the guards: the judge's memory, mapped
        self._begin(watch=bool(cmd.get("watch")))
        launches = self.records_launches and bool(cmd.get("record") or cmd.get("plan"))
        observed = None  # the torch ops the observer saw in this block's calls
        if launches:
            from agentkern.harness import launch_record

            launch_record.start(skip=bool(cmd.get("plan")))
        try:
            if cmd.get("dry"):  # the machinery's own cost (timing.py): views of the inputs, no model call
                args = [self.mapping.args(call, inputs) for call in cmd["calls"]]
                # Off the GPU one input view is described as an output would be; on it nothing is copied.
                outputs = [[] if inputs is not None else [a for a in xs if hasattr(a, "data_ptr")][:1] for xs in args]
                if self.outputs_region is not None:
                    self._dry_copy(self.outputs_region)
            else:
                exact = bool(cmd.get("float64")) and self.guards is None  # never the candidate's
                budget = cmd.get("float64_budget_bytes") if exact else None
                outputs, observed = self._calls(cmd["calls"], mode, inputs, observer, exact, budget)
        finally:
            self._end()
        described = self._describe_all(outputs, inputs)
        answer = {"outputs": described}
        if observed is not None:
            if cmd.get("record"):
                observer.vetted.update(observed)
            elif refused := observer.refused(observed):
                answer["refused_op"] = refused
        if launches:
            from agentkern.harness import launch_record

            answer["launches"] = launch_record.take()
        if getattr(mode, "refused", None):
            answer["refused_op"] = mode.refused  # the judge decides when (after its own checks of the trial)
        if self.guards is not None and self.guards.traps.caught:
            answer["trapped"] = list(self.guards.traps.caught)
        if cmd.get("record"):
            answer["ops"] = sorted(mode.ops)
            answer["flops"] = float(getattr(mode, "flops", 0.0))
        return answer

    def _device_memory(self, cmd: dict):
        """(the inputs' device copy, the outputs' device region) the judge named for this block, on a GPU."""
        if "device_inputs" not in cmd:
            return None, None
        from agentkern.harness.cuda_ipc import OpenedBuffers

        if self.device_buffers is None:
            self.device_buffers = OpenedBuffers()
        inputs = self.device_buffers.get("inputs", cmd["device_inputs"], self.device)
        outputs = cmd.get("device_outputs")
        if not outputs:
            return inputs, None
        return inputs, self.device_buffers.get("outputs", outputs, self.device)[: int(outputs["used"])]

    def _calls(
        self, calls: list, mode, on_device=None, observer=None, exact=False, exact_budget_bytes=None
    ) -> tuple[list, list[str] | None]:
        """(each call's outputs, the torch ops `observer` saw during the calls, or None without one); `exact`:
        the model's float64 copy on the floating inputs in float64, refused past `exact_budget_bytes`."""
        import torch

        from agentkern.harness.allowlist import AllowlistMode
        from agentkern.harness.correctness import as_tensor_list
        from agentkern.harness.rejections import Rejected

        outputs = []
        with torch.no_grad():
            # The inputs' views are the harness's, made before the op allowlist's mode is entered: under it each
            # view would be charged to the candidate (~15 us a call, measured) and not to the reference.
            arguments = [self._arguments(call, on_device) for call in calls]
            model = self.model
            if exact:
                budget = exact_budget_bytes if exact_budget_bytes is not None else float("inf")
                for args in arguments:
                    if refusal := float64_refusal(self.model, args, budget):
                        raise MemoryError(refusal)  # answered as raised: the judge records no exact answer
                model = self._float64_model()
                arguments = [[_float64(a) for a in args] for args in arguments]
        if observer is not None:
            observer.arm()
        with torch.no_grad(), mode:
            for args in arguments:
                outputs.append(as_tensor_list(model(*args), "forward"))
            if self.outputs_region is None and self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
            if calls and isinstance(mode, AllowlistMode) and torch._C._len_torch_dispatch_stack() < 1:
                raise Rejected("dispatch_guard", "took the op allowlist's dispatch mode off the stack")
        observed = None
        if observer is not None:
            observed, tampered = observer.disarm()
            if tampered:
                raise Rejected("dispatch_guard", tampered)
        if self.outputs_region is not None:
            with torch.no_grad():  # the harness's own copies, outside the op allowlist and the op recorder
                outputs = self._to_region(outputs)  # inside the timed block: the copy is part of the call's cost
            torch.cuda.synchronize(self.device)
        return outputs, observed

    def _float64_model(self):
        if self.model64 is None:
            import copy

            self.model64 = copy.deepcopy(self.model).double()
        return self.model64

    def _arguments(self, call: list, on_device=None) -> list:
        import torch

        args = self.mapping.args(call, on_device)
        if self.device.type != "cpu":
            args = [a.to(self.device) if isinstance(a, torch.Tensor) else a for a in args]
        return args

    def _dry_copy(self, region) -> None:
        """What copying a block's outputs into the region costs, without outputs: its halves copied onto each other,
        as many bytes read and written as the real copy (_to_region), then the same synchronisation."""
        import torch

        half = region.numel() // 2
        if half:
            region[half : 2 * half].copy_(region[:half])
            region[:half].copy_(region[half : 2 * half])
        if region.is_cuda:
            torch.cuda.synchronize(self.device)

    def _to_region(self, outputs: list) -> list:
        """Copy each GPU output into the judge's output region, in order, 64-byte aligned; an output that is not
        on this GPU or does not fit stays as it is (described for the judge to read from this process)."""
        from agentkern.harness.arena import aligned

        region, offset, placed = self.outputs_region, 0, []
        for outs in outputs:
            row = []
            for t in outs:
                nbytes = t.numel() * t.element_size()
                if t.device != region.device or offset + nbytes > region.numel() or not nbytes:
                    row.append(t)
                    continue
                region[offset : offset + nbytes].copy_(t.detach().contiguous().view(-1).view(region.dtype))
                row.append((offset, t))
                offset += aligned(nbytes)  # as device_outputs.region_bytes lays them out
            placed.append(row)
        return placed

    def _describe_all(self, outputs: list, inputs) -> list:
        described = []
        for outs in outputs:
            row = []
            for t in outs:
                if isinstance(t, tuple):  # copied into the judge's device region
                    offset, t = t
                    row.append(self._describe_placed(offset, t, inputs))
                else:
                    row.append(self._describe(t))
            described.append(row)
        return described

    @staticmethod
    def _describe_placed(offset: int, t, inputs) -> dict:
        from agentkern.harness.arena import dtype_name

        desc = {"device_offset": offset, "dtype": dtype_name(t.dtype), "shape": list(t.shape)}
        if inputs is not None and t.numel():
            lo = inputs.data_ptr()
            desc["aliases_input"] = lo <= t.data_ptr() < lo + inputs.numel()
        return desc

    def _describe(self, t) -> dict:
        from agentkern.harness.arena import dtype_name

        host = t.detach()
        if host.device.type != "cpu":
            host = host.cpu()  # not in the judge's device region: read back inside the timed block
        host = host.contiguous()
        self.kept.append(host)  # alive until the next block: the judge reads it from this process's memory
        nbytes = host.numel() * host.element_size()
        return {"addr": host.data_ptr(), "nbytes": nbytes, "dtype": dtype_name(host.dtype), "shape": list(host.shape)}

    def check(self, cmd: dict) -> dict:
        if self.guards is not None:
            self.guards.check(first=bool(cmd.get("first")))
        return {"checked": True}

    def _begin(self, watch: bool) -> None:
        if self.guards is not None:
            self.guards.begin(watch)

    def _end(self) -> None:
        if self.guards is not None:
            self.guards.end()


def float64_refusal(model, args: list, budget_bytes: float) -> str | None:
    """Why the exact answer is not computed for `args`: the model's float64 copy and the inputs' (each value
    twice a float32's) would take more than `budget_bytes`, a share of the evaluation's memory limit; past it
    the copy could take the whole evaluation down with it. None when it fits."""
    tensors = [*model.parameters(), *model.buffers(), *(a for a in args if hasattr(a, "is_floating_point"))]
    need = sum(t.numel() * 8 for t in tensors if t.is_floating_point())
    if need <= budget_bytes:
        return None
    return (
        f"the reference's float64 copy and inputs would take {need / 2**30:.2f} GiB, more than the "
        f"{budget_bytes / 2**30:.2f} GiB set aside for it"
    )


def _float64(x):
    """A floating tensor in float64 (exactly its values); anything else as it is."""
    import torch

    return x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x


def serve(runner: Runner) -> None:
    from agentkern.harness.rejections import Rejected

    commands = {"load": runner.load, "block": runner.block, "check": runner.check}
    runner.answer({"ready": True, "pid": os.getpid()})
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "quit":
            break
        try:
            answer = commands[cmd["op"]](cmd)
        except Rejected as rej:
            answer = {"rejected": [rej.code, rej.message]}
        except BaseException as exc:  # noqa: BLE001 - whatever the model throws is the judge's to classify
            answer = {
                "raised": {
                    "type": type(exc).__name__,
                    "message": str(exc)[:2000],
                    "traceback": traceback.format_exc()[-8000:],
                    "compile_failure": _is_compile_failure(exc),
                }
            }
        runner.answer(answer)
    sys.stdout.flush()
    os._exit(0)  # a candidate's leftover threads or atexit hooks must not hang the exit


def _is_compile_failure(exc: BaseException) -> bool:
    from subprocess import CalledProcessError

    from agentkern import backends

    if isinstance(exc, (SyntaxError, CalledProcessError, ImportError)):
        return True
    return any(b.compile_failed(type(exc).__name__, str(exc)) for b in backends.all())


def main() -> None:
    import signal

    from agentkern.harness.deaths import cap_tasks, die_with_parent

    die_with_parent()
    cap_tasks()
    # Python starts with SIGXFSZ ignored (a write past the file-size limit then fails with EFBIG, which a
    # candidate can catch and go on): the default kills the runner at the limit, and the judge says why.
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    import torch  # noqa: F401 - before "ready": the judge never waits for this import inside a phase

    import agentkern.harness.correctness  # noqa: F401
    import agentkern.harness.fallback  # noqa: F401

    serve(Runner(int(sys.argv[1]), int(sys.argv[2])))


if __name__ == "__main__":
    main()
