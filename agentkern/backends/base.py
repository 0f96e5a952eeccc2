"""What agentkern needs to know about a backend (a way of writing kernels), as data: one frozen record each.

The records are read by the loop (default per target kind, --backend checks), the policies (prompt name,
templates), the knowledge base (detection, which targets an exemplar is for) and the harness (device plan,
environment, compile errors). Nothing here runs a compiler or imports torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

DeviceKind = Literal["cpu", "gpu"]
# How a solution is judged where the backend's hardware is absent: "none" (its hardware, the CPU, is always
# here), "interpreter" (run on the CPU with interpreter_env set: correct or not, never timed), "ptx" (compiled
# for the GPU without running: the verdict is "unverified").
WithoutHardware = Literal["none", "interpreter", "ptx"]


@dataclass(frozen=True)
class Backend:
    name: str  # --backend's value, the run store's backend column, the module's name in agentkern/backends/
    device_kind: DeviceKind  # the hardware its kernels run on, matched against a target's kind
    display: str  # its name in messages: "C++", "Triton", "CUDA"
    prompt: str  # the LLM coder's Jinja template in prompts/ (without .j2)
    priority: int  # detection order, lowest first: a CUDA file also holds C++ markers (cpp_sources)
    markers: tuple[str, ...]  # regular expressions (re.M): a match in a solution's source means this backend
    # Python packages its kernels are written with: like torch, a candidate may not assign their attributes.
    python_modules: tuple[str, ...] = ()
    default: bool = False  # the backend for its device kind when --backend is not given (one per kind)
    # Environment variable -> cache folder under AGENTKERN_HOME/cache (config.cache_dir(kind)).
    cache_env: dict[str, str] = field(default_factory=dict, hash=False)
    without_hardware: WithoutHardware = "none"
    interpreter_env: dict[str, str] = field(default_factory=dict, hash=False)  # set when it runs interpreted
    # Exception class names, and text in an exception's message, that mean "did not compile": the verdict is
    # compile_error, not runtime_error.
    compile_error_types: tuple[str, ...] = ()
    compile_error_messages: tuple[str, ...] = ()
    wrong_target: str = ""  # the error for `--backend NAME` with a target of the other kind
    # The error for a solution of this backend judged on a target of the other kind ({target}: its name);
    # None: it is judged there anyway, in its interpreter.
    wrong_target_solution: str | None = None

    def matches(self, source: str) -> bool:
        """True when the solution's source holds one of this backend's markers."""
        return any(re.search(marker, source, re.M) for marker in self.markers)

    def compile_failed(self, type_name: str, message: str) -> bool:
        """True when an exception (by class name and message) is this backend's "did not compile"."""
        return type_name in self.compile_error_types or any(m in message for m in self.compile_error_messages)
