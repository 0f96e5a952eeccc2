"""Runtime guards inside the sandbox worker: what a candidate does while it is imported and called.

- RuntimeSnapshot: identity of the timers, sync and comparison functions; any change means patching.
- AuditGuard: a Python audit hook (it cannot be removed once added) that notes frame walking, gc
  scans, tracing, subprocesses and sockets started from the candidate's own code.
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
import types

import torch

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
        # Functions, classes and modules: what a cheat swaps. Plain values (torch.cuda's `_initialized` and the
        # like) are rebound by torch itself as it initialises, and an honest kernel's first launch does that.
        return {k: id(v) for k, v in list(vars(obj).items()) if callable(v) or isinstance(v, types.ModuleType)}

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
        self._real: dict[str, str] = {}  # a frame's file name -> its real path
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        code = AUDIT_EVENTS.get(event)
        if event == "ctypes.dlopen":  # a compute library loaded by name (native_check.py looks at the rest)
            from agentkern.harness.native_check import COMPUTE_LIBRARIES

            code = "native_fallback" if args and COMPUTE_LIBRARIES.search(str(args[0])) else None
        if not self.active or code is None or getattr(self._local, "busy", False):
            return
        self._local.busy = True  # sys._getframe below raises an audit event of its own
        try:
            if self.from_candidate(sys._getframe(1)):
                what = event if event != "object.__getattr__" else f"reads .{args[1] if len(args) > 1 else '?'}"
                self.violations.append((code, what))
        finally:
            self._local.busy = False

    def from_candidate(self, frame) -> bool:
        # The first frame outside the standard library decides: the candidate's file, or code it
        # generated with exec/compile ("<string>"), counts; torch's or agentkern's own code does not.
        for _ in range(8):
            if frame is None:
                return False
            filename = frame.f_code.co_filename
            if filename.startswith("<") and not filename.startswith("<frozen"):
                return True
            real = self._real.get(filename)
            if real is None:  # resolved once per file: torch's own mode exits pass here on every timed block
                real = self._real[filename] = os.path.realpath(filename)
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
