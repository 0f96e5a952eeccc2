"""The op observer: the op allowlist of the timed blocks, in C++ (op_observer.cpp), at ~0.2 us an op.

The allowlist (allowlist.py) watches every candidate call through a Python dispatch mode: 3-8 us per aten op
and a share that grows with the data, all charged to the candidate, which decided the memory-bound problems
whose kernels run at the bandwidth eager torch reaches. Where this library builds, the trials keep the mode
(it judges what an op is) and the timed blocks use the observer instead: a global RecordFunction callback
noting the names of the operators dispatched. A timed block may dispatch only ops its trials dispatched (the
observer is armed in the trials too, beside the mode) and neutral ones (fallback.NEUTRAL_OPS); anything else
is torch computing where no mode was looking (`torch_fallback`), decided by the judge after the block as
before. After each block the runner dispatches a canary op and checks the callback still ran, and that the
observer was not disarmed or re-armed in between (`dispatch_guard`).

The judge builds the library (trusted code, against the torch it runs; cached by source, torch and
compiler), the sandbox shows its folder read-only, and the runner loads it before the candidate is imported.
Without a compiler or torch's headers, or with AGENTKERN_NO_OP_OBSERVER=1, the mode covers the timed blocks
as well (the cost above, the same verdicts).
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

from agentkern.harness.fallback import NEUTRAL_OPS

SOURCE = Path(__file__).with_name("op_observer.cpp")
TORCH_NAMESPACES = ("aten::", "prims::")
NAMES_LIMIT = 1 << 16  # bytes of names read back per block; more is itself a verdict (below)


@functools.cache
def library() -> Path | None:
    """The observer's library, built here (the judge) when missing; None where it cannot be built or is off."""
    if os.environ.get("AGENTKERN_NO_OP_OBSERVER"):
        return None
    from agentkern import native

    build = native.torch_build_flags()
    if build is None:
        return None
    import torch

    flags = ("-O2", "-std=c++17", "-shared", "-fPIC", *build[0])
    try:
        source = SOURCE.read_text() + f"\n// torch {torch.__version__}\n"  # a torch upgrade rebuilds it
        return native.built_library(source, "akobserver", flags, build[1])
    except (native.CompileError, OSError):
        return None


def readable() -> list[Path]:
    """What a sandboxed runner must be able to read for the observer: its library's folder, or nothing."""
    lib = library()
    return [lib.parent] if lib is not None else []


class Observer:
    """The runner's handle on the library: install once, arm before a block's calls, read the names after."""

    def __init__(self, path: str) -> None:
        self.lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL)
        self.lib.ak_observer_install.restype = ctypes.c_int
        self.lib.ak_observer_events.restype = ctypes.c_uint64
        self.lib.ak_observer_disarm.restype = ctypes.c_int64
        self.lib.ak_observer_disarm.argtypes = [
            ctypes.c_char_p,
            ctypes.c_int64,
            ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.c_uint64),
        ]
        if self.lib.ak_observer_install() != 0:
            raise OSError("the op observer did not install")
        self.arms = 0
        self.vetted: set[str] = set()  # what the trials dispatched, under the mode's eyes

    def arm(self) -> None:
        self.arms += 1
        self.lib.ak_observer_arm()

    def disarm(self) -> tuple[list[str], str | None]:
        """(the torch op names dispatched since arm(), each once, in the order first dispatched; a tampering
        finding or None). Call it right after the calls: the canary op here must be seen."""
        import torch

        before = self.lib.ak_observer_events()
        torch.empty(0)  # the canary: a neutral op, dispatched by the runner itself
        fired = self.lib.ak_observer_events() != before
        buf = ctypes.create_string_buffer(NAMES_LIMIT)
        was_armed, arms = ctypes.c_int(), ctypes.c_uint64()
        size = self.lib.ak_observer_disarm(buf, NAMES_LIMIT, ctypes.byref(was_armed), ctypes.byref(arms))
        if not fired:
            return [], "turned the op observer's callbacks off"
        if not was_armed.value or arms.value != self.arms:
            return [], "disarmed or re-armed the op observer"
        if size >= NAMES_LIMIT:
            return [], "dispatched more operators than the op observer reads back"
        names = [n for n in buf.value.decode("utf-8", "replace").split("\n") if n.startswith(TORCH_NAMESPACES)]
        return names, None

    def refused(self, names: list[str]) -> str | None:
        """The first op of a timed block (in dispatch order) that its trials did not dispatch and that is not
        neutral."""
        for name in names:
            if (
                name not in self.vetted
                and name.startswith(TORCH_NAMESPACES)
                and name.split("::", 1)[1] not in NEUTRAL_OPS
            ):
                return name.split("::", 1)[1]
        return None
