"""Runtime guards inside the sandbox worker: what a candidate does while it is imported and called.

- RuntimeSnapshot: identity of the timers, sync and comparison functions; any change means patching.
- AuditGuard: a Python audit hook (it cannot be removed once added) that notes frame walking, gc
  scans, tracing, subprocesses and sockets started from the candidate's own code.
- OpRecorder: the aten ops a call dispatches, to catch a candidate that calls the op it replaces.
- ThreadWatch: Python threads and native tasks that outlive a call.
Runs only in the worker: it imports torch.
"""

from __future__ import annotations

import builtins
import os
import resource
import sys
import sysconfig
import threading
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry, sdpa_flop_count

from agentkern.harness.rejections import Rejected


class RuntimeSnapshot:
    """Ids of every attribute of the objects a cheat would patch to look fast or correct."""

    def __init__(self) -> None:
        import torch.nn.functional as F
        import torch.testing

        self.watched = {
            "time": time,
            "torch": torch,
            "torch.Tensor": torch.Tensor,
            "torch.nn.functional": F,
            "torch.testing": torch.testing,
            "torch.cuda": torch.cuda,
            "torch.cuda.Event": torch.cuda.Event,
            "builtins": builtins,
            "torch.nn.Module": torch.nn.Module,
        }
        self.ids = {name: self._ids(obj) for name, obj in self.watched.items()}
        self.interceptors = self._interceptors()

    @staticmethod
    def _interceptors() -> dict[str, int]:
        """Global hooks and modes: anything registered here would see the reference's calls and output."""
        import torch.nn.modules.module as module_mod

        counts = {
            name: len(getattr(module_mod, name))
            for name in dir(module_mod)
            if name.startswith("_global_") and hasattr(getattr(module_mod, name), "__len__")
        }
        counts["torch function mode"] = torch._C._len_torch_function_stack()
        counts["torch dispatch mode"] = torch._C._len_torch_dispatch_stack()
        return counts

    @staticmethod
    def _ids(obj) -> dict[str, int]:
        return {k: id(v) for k, v in list(vars(obj).items())}

    def check(self) -> None:
        now = self._interceptors()
        for name, count in self.interceptors.items():
            if now.get(name, 0) > count:
                raise Rejected(
                    "reuses_reference_output",
                    f"left a global {name.strip('_').replace('_', ' ')} installed, which would see the reference's output",
                )
        for name, obj in self.watched.items():
            before = self.ids[name]
            now = self._ids(obj)
            # New names are fine (torch loads submodules lazily); a changed or deleted one is a patch.
            for attr, ident in before.items():
                if now.get(attr) != ident:
                    raise Rejected("patches_runtime", f"replaced {name}.{attr}")


# Audit events that mean "looking at the harness" or "leaving the sandbox", and their reason codes.
AUDIT_EVENTS = {
    "sys._getframe": "reads_harness",
    "sys._current_frames": "reads_harness",
    "sys.settrace": "reads_harness",
    "sys.setprofile": "reads_harness",
    "gc.get_objects": "reads_harness",
    "gc.get_referrers": "reads_harness",
    "gc.get_referents": "reads_harness",
    "object.__getattr__": "reads_harness",  # reading f_back, tb_frame, gi_frame, f_code, ...
    "sys.addaudithook": "reads_harness",
    "subprocess.Popen": "forbidden_call",
    "os.system": "forbidden_call",
    "os.exec": "forbidden_call",
    "os.fork": "forbidden_call",
    "os.forkpty": "forbidden_call",
    "os.posix_spawn": "forbidden_call",
    "os.spawn": "forbidden_call",
    "pty.spawn": "forbidden_call",
    "socket.connect": "forbidden_call",
    "socket.bind": "forbidden_call",
    "socket.__new__": "forbidden_call",
    "exec": "forbidden_call",
    "compile": "forbidden_call",
}


class AuditGuard:
    """Notes audit events raised by the candidate's code while `active` is set."""

    def __init__(self, candidate_file: str) -> None:
        self.candidate_file = os.path.realpath(candidate_file)
        self.stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
        self.active = False
        self.violations: list[tuple[str, str]] = []
        self._local = threading.local()
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        code = AUDIT_EVENTS.get(event)
        if not self.active or code is None or getattr(self._local, "busy", False):
            return
        self._local.busy = True  # sys._getframe below raises an audit event of its own
        try:
            if self._from_candidate(sys._getframe(1)):
                what = event if event != "object.__getattr__" else f"reads .{args[1] if len(args) > 1 else '?'}"
                self.violations.append((code, what))
        finally:
            self._local.busy = False

    def _from_candidate(self, frame) -> bool:
        # The first frame outside the standard library decides: the candidate's file, or code it
        # generated with exec/compile ("<string>"), counts; torch's or agentkern's own code does not.
        for _ in range(8):
            if frame is None:
                return False
            filename = frame.f_code.co_filename
            if filename.startswith("<") and not filename.startswith("<frozen"):
                return True
            real = os.path.realpath(filename)
            if real == self.candidate_file:
                return True
            if not real.startswith(self.stdlib) or "site-packages" in real:
                return False
            frame = frame.f_back
        return False

    def check(self) -> None:
        if self.violations:
            code, what = self.violations[0]
            raise Rejected(code, f"the candidate's code raised the audit event {what}")


# Ops that only allocate, reshape or copy: calling them is not computing the answer with torch.
NEUTRAL_OPS = {
    "empty",
    "empty_like",
    "empty_strided",
    "new_empty",
    "new_empty_strided",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "new_zeros",
    "new_ones",
    "new_full",
    "fill_",
    "zero_",
    "view",
    "_unsafe_view",
    "reshape",
    "as_strided",
    "t",
    "transpose",
    "permute",
    "contiguous",
    "clone",
    "copy_",
    "detach",
    "alias",
    "expand",
    "squeeze",
    "unsqueeze",
    "select",
    "slice",
    "split",
    "split_with_sizes",
    "chunk",
    "lift_fresh",
    "_to_copy",
    "to",
    "resize_",
    "set_",
    "unbind",
    "flatten",
    "unflatten",
    "narrow",
    "arange",
    "_local_scalar_dense",
    "item",
    "is_contiguous",
    "stride",
    "size",
    "numel",
    "dim",
    "sym_size",
    "sym_stride",
    "sym_numel",
    "_reshape_alias",
    "view_as",
    "expand_as",
    "empty_permuted",
    "randn",
    "rand",
    "normal_",
    "uniform_",
}
# Ops that do the real work of a problem: a candidate may not call any of these that the reference
# calls. Grouped, so that torch.addmm does not stand in for torch.mm.
FAMILIES = {
    "matmul": {
        "mm",
        "addmm",
        "bmm",
        "baddbmm",
        "addbmm",
        "matmul",
        "linear",
        "addmv",
        "mv",
        "dot",
        "vdot",
        "einsum",
        "_addmm_activation",
        "tensordot",
        "inner",
        "outer",
        "addr",
        "_mm_plus_mm",
    },
    "softmax": {"_softmax", "softmax", "_log_softmax", "log_softmax", "_safe_softmax"},
    "layer_norm": {"native_layer_norm", "layer_norm"},
    "rms_norm": {"rms_norm", "_fused_rms_norm"},
    "group_norm": {"native_group_norm", "group_norm"},
    "batch_norm": {
        "native_batch_norm",
        "batch_norm",
        "_native_batch_norm_legit",
        "_native_batch_norm_legit_no_training",
        "_batch_norm_impl_index",
    },
    "conv": {
        "convolution",
        "_convolution",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "mkldnn_convolution",
        "cudnn_convolution",
    },
    "attention": {
        "scaled_dot_product_attention",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_flash_attention_for_cpu",
        "_flash_attention_forward",
    },
}
HEAVY_FAMILIES = set(FAMILIES)
_FAMILY_OF = {op: fam for fam, ops in FAMILIES.items() for op in ops}


def op_family(op: str) -> str:
    return _FAMILY_OF.get(op, op.rstrip("_"))  # relu_ and relu are one op


def _causal_share(args: tuple, kwargs: dict) -> float:
    """The share of the (query, key) pairs causal attention computes (query i sees keys 0..i): the least work
    a correct kernel does, so a kernel that skips the masked half is not flagged as beating the roofline.
    torch's formula counts every pair whatever is_causal says. 1.0 when not causal."""
    causal = args[4] if len(args) > 4 else kwargs.get("is_causal", False)
    if not causal:
        return 1.0
    sq, skv = args[0].shape[-2], args[1].shape[-2]
    if sq == 0 or skv == 0:
        return 1.0
    full = max(0, min(sq, skv))  # rows i < skv see i + 1 keys; later rows see all skv
    seen = full * (full + 1) // 2 + (sq - full) * skv
    return seen / (sq * skv)


class OpRecorder(TorchDispatchMode):
    """Records the aten ops dispatched while active (after autograd, so torch.softmax shows as _softmax),
    and counts their FLOPs with torch's own formulas (torch.utils.flop_counter's registry)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Otherwise the first dispatch imports torch._dynamo (~2 s), for a mode that never compiles.
        return False

    def __init__(self) -> None:
        super().__init__()
        self.ops: set[str] = set()
        self.flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        packet = func.overloadpacket
        self.ops.add(packet.__name__)
        out = func(*args, **kwargs)
        count = flop_registry.get(packet)
        if count is not None:
            self.flops += count(*args, **kwargs, out_val=out)
        elif packet.__name__ == "_scaled_dot_product_flash_attention_for_cpu":
            # torch's registry has the GPU attention kernels only; the CPU one does the same work
            self.flops += sdpa_flop_count(args[0].shape, args[1].shape, args[2].shape) * _causal_share(args, kwargs)
        return out

    def compute_families(self) -> set[str]:
        return {op_family(op) for op in self.ops if op not in NEUTRAL_OPS}


def check_fallback(reference_families: set[str], candidate_families: set[str]) -> None:
    """Reject a candidate that calls the reference's heavy op, or re-runs all of the reference in torch."""
    shared_heavy = sorted(reference_families & candidate_families & HEAVY_FAMILIES)
    if shared_heavy:
        raise Rejected("torch_fallback", f"calls torch's {shared_heavy[0]} op, which the reference uses")
    if reference_families and reference_families <= candidate_families:
        ops = ", ".join(sorted(reference_families))
        raise Rejected("torch_fallback", f"computes with the reference's own torch ops ({ops})")


def native_thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _children_usage() -> tuple[float, int]:
    """CPU time and page faults of this process's reaped children: they grow when a call forks."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_minflt


def _live_children() -> list[int]:
    me = str(os.getpid())
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[1] == me:
                        found.append(int(pid))
            except (OSError, IndexError):
                continue
    return found


class ThreadWatch:
    """Threads and processes a call leaves behind, or started and reaped while it ran."""

    def __init__(self) -> None:
        self.python_before: set[int] = set()
        self.native_before = 0
        self.children_before = (0.0, 0)
        self.builds_before = 0

    def before(self) -> None:
        from agentkern import native

        self.python_before = {t.ident for t in threading.enumerate()}
        self.native_before = native_thread_count()
        self.children_before = _children_usage()
        self.builds_before = native.BUILDS

    def after(self, allow_native_growth: bool) -> None:
        from agentkern import native

        # Processes: a fork from native code raises no audit event, but its child shows up here, alive
        # or reaped. A kernel's first calls may run a JIT's compiler (ptxas), and compile_cpp its g++.
        if not allow_native_growth and native.BUILDS == self.builds_before:
            if _live_children():
                raise Rejected("forbidden_call", "the call left a child process running")
            if _children_usage() != self.children_before:
                raise Rejected("forbidden_call", "the call started (and reaped) child processes")
        new = [t for t in threading.enumerate() if t.ident not in self.python_before and t.is_alive()]
        if new:
            raise Rejected("background_work", f"thread {new[0].name!r} is still running after the call returned")
        # Thread pools (OpenMP, torch) are created on a kernel's first calls and then reused; growth after
        # that means a thread started per call.
        grown = native_thread_count() - self.native_before
        if grown > 0 and not allow_native_growth:
            raise Rejected("background_work", f"{grown} native thread(s) started by the call are still running")
