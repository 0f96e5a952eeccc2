"""Worker side: executing a problem or solution file as a module (only ever inside a sandboxed worker)."""

from __future__ import annotations

import sys
import types
from pathlib import Path


def load_module(path: str, name: str, register: bool = True) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = path
    if register:  # dataclasses and Triton's JIT look a module up in sys.modules
        sys.modules[name] = module
    source = Path(path).read_text()
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def load_problem_module(path: str, name: str, size: str | None, register: bool = True) -> types.ModuleType:
    """A problem, imported, with its size constants set for `size` (agentkern/sizes.py)."""
    from agentkern.sizes import apply_size

    module = load_module(path, name, register)
    apply_size(module, size)
    return module
