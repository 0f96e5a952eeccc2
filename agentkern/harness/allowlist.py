"""What a candidate may do with torch and numpy while it is called: the runner's side of the fallback rule.

A kernel uses torch to allocate, view, copy and launch its own code; the computing is its own. Every call
of the candidate, in the trials and in every timed block, runs under AllowlistMode, a TorchDispatchMode
that notes each aten op dispatched: one outside fallback.NEUTRAL_OPS (allocation, views, copies, parameter
initialisation) is torch doing the work, whatever its name (`_masked_softmax` for softmax, a 1x1
`conv2d` for a matmul). Ops of other namespaces (a custom op the candidate registered) are its own.

Two ways around a dispatch mode are closed here too: turning the mode off (`_DisableTorchDispatch`,
`DisableTorchFunction`, excluding the Python dispatch key, popping the mode stack; and RecordFunction, which
the timed blocks' op observer listens to: op_observer.py), and leaving torch for
numpy (`Tensor.numpy()`, `__array__`, `np.frombuffer` on a tensor's memory): both are trapped when called
from the candidate's own code. This all runs inside the candidate's process, so a candidate with native
code can get around it; it is one layer (the judge's own native-library check is another: native_check.py).
"""

from __future__ import annotations

import sys

from torch.utils._python_dispatch import TorchDispatchMode

from agentkern.harness.fallback import NEUTRAL_OPS
from agentkern.harness.rejections import Rejected

TORCH_NAMESPACES = ("aten", "prims")
# torch._C names that switch dispatch modes off or take them off the stack.
DISPATCH_SWITCHES = (
    "_DisableTorchDispatch",
    "DisableTorchFunction",
    "DisableTorchFunctionSubclass",
    "_ExcludeDispatchKeyGuard",
    "_ForceDispatchKeyGuard",
    "_DisablePythonDispatcher",
    "_pop_torch_dispatch_stack",
    "_unset_dispatch_mode",
    "_pop_torch_function_stack",
)
PYTHON_DISPATCH_SWITCHES = ("_disable_current_modes", "_pop_mode", "_pop_mode_temporarily", "_disable_infra_mode")
# torch._C._autograd (and torch.autograd's aliases) names that turn RecordFunction off: the op observer's
# callbacks (op_observer.py) would then miss the ops dispatched meanwhile.
RECORD_FUNCTION_SWITCHES = ("_enable_record_function", "_clear_callbacks")


class AllowlistMode(TorchDispatchMode):
    """Notes every op; the first one outside the allowlist becomes the verdict, decided by the judge after the
    call (not raised inside it, where a candidate's try/except could swallow it)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # otherwise the first dispatch imports torch._dynamo (~2 s)

    def __init__(self) -> None:
        super().__init__()
        self.ops: set[str] = set()
        self.refused: str | None = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        self.ops.add(name)
        if self.refused is None and func.namespace in TORCH_NAMESPACES and name not in NEUTRAL_OPS:
            self.refused = name
        return func(*args, **(kwargs or {}))


def refused(op: str) -> Rejected:
    return Rejected(
        "torch_fallback",
        f"computes with torch's {op} op (a kernel may use torch only to allocate, view, copy and launch its own code)",
    )


class Traps:
    """Wrappers around the dispatch switches and numpy's ways into a tensor's memory, noting a call from the
    candidate's own code (`from_candidate(frame)`: guards.AuditGuard decides whose frame it is)."""

    def __init__(self, from_candidate) -> None:
        self.from_candidate = from_candidate
        self.caught: tuple[str, str] | None = None

    def install(self) -> None:
        import torch
        import torch.utils._python_dispatch as python_dispatch

        for name in DISPATCH_SWITCHES:
            if hasattr(torch._C, name):
                setattr(torch._C, name, self._trap(getattr(torch._C, name), "dispatch_guard", name))
        for name in PYTHON_DISPATCH_SWITCHES:
            if hasattr(python_dispatch, name):
                setattr(python_dispatch, name, self._trap(getattr(python_dispatch, name), "dispatch_guard", name))
        for module in (torch._C._autograd, torch.autograd):
            for name in RECORD_FUNCTION_SWITCHES:
                if hasattr(module, name):
                    setattr(module, name, self._trap(getattr(module, name), "dispatch_guard", name))
        torch.Tensor.numpy = self._trap(torch.Tensor.numpy, "numpy_fallback", "Tensor.numpy")
        torch.Tensor.__array__ = self._trap(torch.Tensor.__array__, "numpy_fallback", "Tensor.__array__")
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.frombuffer = self._trap(numpy.frombuffer, "numpy_fallback", "numpy.frombuffer")
            numpy.ctypeslib.as_array = self._trap(
                numpy.ctypeslib.as_array, "numpy_fallback", "numpy.ctypeslib.as_array"
            )

    def _trap(self, original, code: str, name: str):
        traps = self

        def trapped(*args, **kwargs):
            if traps.caught is None and traps.from_candidate(sys._getframe(1)):
                traps.caught = (code, name)
            return original(*args, **kwargs)

        trapped.__name__ = getattr(original, "__name__", name)
        trapped.__doc__ = getattr(original, "__doc__", None)
        return trapped


def fallback_verdict(answer: dict) -> Rejected | None:
    """The fallback a runner's answer to a block reports (an op outside the allowlist, a trap sprung), for the
    judge to raise once its own checks of the call are done; None when there is none. The answer is the
    candidate's word: it can only make things worse for itself."""
    trapped = answer.get("trapped")
    if isinstance(trapped, list) and len(trapped) == 2:
        code, name = (str(x)[:64] for x in trapped)
        if code == "dispatch_guard":
            what = f"turned torch's dispatch modes or op callbacks off ({name})"
            return Rejected(code, f"{what}: the op allowlist must see every op")
        return Rejected("numpy_fallback", f"hands a tensor's memory to numpy ({name}): numpy computing is a fallback")
    op = answer.get("refused_op")
    return refused(str(op)[:64]) if op else None
