"""Checks on a candidate's source before it runs: backend detection and the obvious ways to cheat.

These are the first line only. Obfuscated forms (`__import__('g' + 'c')`, getattr with built strings) get
past any static check; the worker's audit hook and runtime guards catch what they actually do.
"""

from __future__ import annotations

import ast
import re

from agentkern import backends
from agentkern.harness.rejections import Rejected

# Modules a kernel has no business importing, and the reason code each one implies.
FORBIDDEN_MODULES = {
    "gc": "reads_harness",
    "inspect": "reads_harness",
    "traceback": "reads_harness",
    "importlib": "reads_harness",
    "subprocess": "forbidden_call",
    "socket": "forbidden_call",
    "multiprocessing": "forbidden_call",
    "pty": "forbidden_call",
    "threading": "background_work",
    "_thread": "background_work",
    "concurrent": "background_work",
    "asyncio": "background_work",
}

# Attribute or function names whose use is itself the tell.
FORBIDDEN_ATTRIBUTES = {
    "_getframe": "reads_harness",
    "_current_frames": "reads_harness",
    "f_back": "reads_harness",
    "f_locals": "reads_harness",
    "f_globals": "reads_harness",
    "tb_frame": "reads_harness",
    "gi_frame": "reads_harness",
    "settrace": "reads_harness",
    "setprofile": "reads_harness",
    "get_objects": "reads_harness",
    "get_referrers": "reads_harness",
    "get_referents": "reads_harness",
    "modules": "reads_harness",  # sys.modules: finding the reference's module
    "_python_dispatch": "reads_harness",
    "_get_current_dispatch_mode": "reads_harness",
    "is_in_torch_dispatch_mode": "reads_harness",
    "addaudithook": "reads_harness",
    "pythonapi": "reads_harness",
    "PYFUNCTYPE": "reads_harness",  # native code handing Python objects (frames) back
    "py_object": "reads_harness",
    "PyDLL": "reads_harness",
    "system": "forbidden_call",
    "popen": "forbidden_call",
    "fork": "forbidden_call",
    "Stream": "side_stream",
    "ExternalStream": "side_stream",
    "set_stream": "side_stream",
}
SIDE_STREAM_CALLS = {"stream"}  # torch.cuda.stream(s) context manager

# Modules whose attributes a kernel must never assign: timers, sync, comparisons, and the backends' own (triton).
PATCHABLE_ROOTS = {"time", "torch", "numpy", "np", "builtins", *(m for b in backends.all() for m in b.python_modules)}

# Threads started from native code outlive the call just like Python ones.
NATIVE_THREAD = re.compile(r"std::thread|std::jthread|std::async|pthread_create")
CUDA_STREAM = re.compile(r"cudaStreamCreate|cudaStreamNonBlocking|getStreamFromPool")
# Native code that starts processes escapes every Python-level guard (and the thread-count contract).
NATIVE_PROCESS = re.compile(r"\b(v?fork|posix_spawnp?|execv[pe]?|execl[pe]?|system|popen)\s*\(")
# Python's C API from a kernel (PyEval_GetFrame, ...), or ctypes handing Python objects to native code:
# the way to walk the harness's frames without a single Python-level tell.
PYTHON_C_API = re.compile(r"\b_?Py[A-Z_][A-Za-z_]*\s*\(|\bdlsym\s*\(")


def detect_backend(source: str) -> str:
    """cuda, triton, cpp or torch, by what the solution contains: agentkern.backends.detect, the one detector."""
    return backends.detect(source)


def _module_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> root module, for `import torch as t`, `from torch import cuda`, ..."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = node.module.split(".")[0]
    return aliases


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _native_text(tree: ast.Module) -> str:
    """The candidate's string literals, where its C++/CUDA source lives, without docstrings: prose that
    mentions fork() or a file system (ext4) is not code. Python calls are the AST checks' business."""
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return "\n".join(
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in prose
    )


def check_source(source: str, tree: ast.Module) -> None:
    """Raise Rejected for the first forbidden construct found in the candidate's source."""
    aliases = _module_aliases(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                code = FORBIDDEN_MODULES.get(name.split(".")[0])
                if code:
                    raise Rejected(code, f"imports {name} (line {node.lineno})")
        elif isinstance(node, ast.Attribute):
            code = FORBIDDEN_ATTRIBUTES.get(node.attr)
            # `modules` and `system` are only telling on sys and os.
            if (
                node.attr == "modules"
                and _root_name(node) not in {"sys"}
                and aliases.get(_root_name(node) or "") != "sys"
            ):
                code = None
            if node.attr in {"system", "popen", "fork"} and aliases.get(_root_name(node) or "") != "os":
                code = None
            if (
                node.attr in {"Stream", "ExternalStream", "set_stream"}
                and aliases.get(_root_name(node) or "") != "torch"
            ):
                code = None
            if code:
                raise Rejected(code, f"uses {_dotted(node)} (line {node.lineno})")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in SIDE_STREAM_CALLS and "cuda" in _dotted(func):
                raise Rejected("side_stream", f"uses {_dotted(func)}() (line {node.lineno})")
            if isinstance(func, ast.Name) and func.id in {"exec", "eval"}:
                raise Rejected("forbidden_call", f"calls {func.id}() (line {node.lineno})")
            if isinstance(func, ast.Name) and func.id in {"setattr", "delattr"} and node.args:
                root = _root_name(node.args[0])
                if root and aliases.get(root) in PATCHABLE_ROOTS:
                    raise Rejected("patches_runtime", f"{func.id} on {_dotted(node.args[0])} (line {node.lineno})")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                root = _root_name(target)
                if isinstance(target, ast.Attribute) and root and aliases.get(root) in PATCHABLE_ROOTS:
                    raise Rejected("patches_runtime", f"assigns {_dotted(target)} (line {node.lineno})")
    native = _native_text(tree)
    match = PYTHON_C_API.search(native)
    if match:
        raise Rejected(
            "reads_harness", f"reaches into the Python interpreter from native code ({match.group(0).strip()})"
        )
    match = NATIVE_PROCESS.search(native)
    if match:
        raise Rejected("forbidden_call", f"native code starts a process ({match.group(0).strip()})")
    match = NATIVE_THREAD.search(native)
    if match:
        raise Rejected("background_work", f"native code starts a thread ({match.group(0)})")
    match = CUDA_STREAM.search(native)
    if match:
        raise Rejected("side_stream", f"native code creates a CUDA stream ({match.group(0)})")
