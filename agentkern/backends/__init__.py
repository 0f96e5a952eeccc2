"""The backends kernels are written in, one module per backend in this package (cpp.py, triton.py, cuda.py),
each defining a module-level BACKEND (a base.Backend), found by name as tinygrad finds its devices: adding a
backend is adding a file here (docs/backends.md lists the few others). Declarative: nothing in this package
imports the harness, torch or triton, so the loop, the policies, the knowledge base and the harness all read
the same facts.
"""

from __future__ import annotations

import importlib
import pkgutil

from agentkern.backends.base import Backend, DeviceKind
from agentkern.errors import UserError

__all__ = ["NO_BACKEND", "Backend", "DeviceKind", "all", "default_for", "detect", "get", "names"]

# What detect() says of a solution with no kernel of its own (it only calls PyTorch); not a Backend.
NO_BACKEND = "torch"


def _discover() -> dict[str, Backend]:
    """name -> Backend for every module in this package except base, in detection order."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base" or info.name.startswith("_"):
            continue
        backend = getattr(importlib.import_module(f"{__name__}.{info.name}"), "BACKEND", None)
        if not isinstance(backend, Backend) or backend.name != info.name:
            raise RuntimeError(
                f"agentkern/backends/{info.name}.py must define BACKEND = Backend(name={info.name!r}, ...)"
            )
        found.append(backend)
    found.sort(key=lambda b: (b.priority, b.name))
    return {b.name: b for b in found}


def names() -> tuple[str, ...]:
    """Every backend's name, in detection order."""
    return tuple(_REGISTRY)


def all() -> list[Backend]:  # shadows the builtin inside this module only: do not call all() here
    """Every backend, in detection order."""
    return list(_REGISTRY.values())


def get(name: str) -> Backend:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UserError(f"unknown backend {name!r}: choose one of {', '.join(names())}") from None


def detect(source: str) -> str:
    """The backend a solution uses, by its markers, or "torch" when none is recognised. The one detector:
    the harness judges by it and `kb add` files kernels by it."""
    for backend in _REGISTRY.values():
        if backend.matches(source):
            return backend.name
    return NO_BACKEND


def default_for(target_kind: str) -> str:
    """The backend written for a target kind ("cpu" -> "cpp", "gpu" -> "triton") when none is asked for."""
    for backend in _REGISTRY.values():
        if backend.default and backend.device_kind == target_kind:
            return backend.name
    raise UserError(f"no backend writes kernels for a {target_kind} target")


# Found at import, before any candidate code runs in a worker that imports this package.
_REGISTRY = _discover()
