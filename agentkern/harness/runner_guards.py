"""The candidate runner's in-process guards: defence in depth, not the line of defence.

The judge decides from outputs it reads and compares itself; these guards only add early, well-named
rejections for what a candidate does inside its own process (patching torch, walking frames, starting
threads or processes, falling back to torch ops). A candidate that disarms them is still judged on its
outputs and on the judge's clock. Their findings are believed only when they reject.
"""

from __future__ import annotations

from agentkern.harness.guards import AuditGuard, RuntimeSnapshot, ThreadWatch


def settle_torch() -> None:
    """Let torch finish its lazy set-up before the runtime snapshot, so that what it rewraps on first use
    (if torch._dynamo gets imported, torch.manual_seed is replaced) is not taken for a candidate's patch."""
    import torch

    from agentkern.harness.fallback import OpRecorder

    x = torch.ones(2, 2)
    with OpRecorder():
        torch.mm(x, x)


class Guards:
    def __init__(self, candidate_file: str) -> None:
        from agentkern.harness.allowlist import Traps

        self.audit = AuditGuard(candidate_file)
        self.traps = Traps(self.audit.from_candidate)
        self.traps.install()  # before the snapshot: the traps are agentkern's, not a candidate's patch
        settle_torch()
        self.snapshot = RuntimeSnapshot()
        self.watch: ThreadWatch | None = None

    def begin(self, watch: bool) -> None:
        """Arm the audit hook for a load or a block of calls; `watch`: note the threads and processes there
        are now, so that check() can tell which the calls left behind (not in timed blocks: it costs time)."""
        self.watch = None
        if watch:
            self.watch = ThreadWatch()
            self.watch.before()
        self.audit.active = True

    def end(self) -> None:
        self.audit.active = False

    def check(self, first: bool = True) -> None:
        """Reject what the guards saw. `first`: a kernel's first calls may start its thread pools or run its
        JIT's compiler."""
        self.audit.check()
        self.snapshot.check()
        if self.watch is not None:
            watch, self.watch = self.watch, None
            watch.after(allow_native_growth=first)
