"""Small utilities. Imports nothing else from agentkern (tinygrad's rule), so anything may import it."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import secrets
import threading
from pathlib import Path
from typing import Any

# CPython 3.11's AST constructor keeps its recursion depth in per-interpreter state: two threads parsing at
# once (bench's problems in flight, each checking its candidates) can fail with "SystemError: AST
# constructor recursion depth mismatch" (python/cpython#106905; seen here in a bench run with 2 workers).
_AST_LOCK = threading.RLock()


# The largest source file agentkern parses or compiles (a problem, a candidate, a model's reply). Honest
# kernels are tens of kB; a bigger file is refused before it is read (see agentkern/problems.py).
MAX_SOURCE_BYTES = 4 * 2**20


class SourceTooComplex(SyntaxError):
    """A source Python's parser or compiler cannot take without exhausting agentkern itself: too large, or
    nested deeper than its recursion limits (CPython 3.11 reports those as RecursionError or MemoryError,
    which would otherwise end agentkern). A SyntaxError, so every caller that handles bad code handles it."""


def source_too_large(size: int, unit: str = "bytes") -> SourceTooComplex:
    return SourceTooComplex(f"source too large: {size} {unit}, limit {MAX_SOURCE_BYTES}")


def python_parser_lock() -> threading.RLock:
    """The lock parse_python holds: held too around work whose libraries parse Python behind our back (torch's
    tracing, through inspect.signature), so neither side meets the other's AST recursion state (seen in a
    level-2 bench with 2 workers, 2026-11-28, parse_python already locked, a trace running beside it)."""
    return _AST_LOCK


# The race above also lies with any library parsing without the lock: the error is transient (the other
# thread's depth, not the source's), so a parse that meets it is tried again, a few times.
_AST_RACE_RETRIES = 3


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    """ast.parse, one thread at a time (see _AST_LOCK). Raises SyntaxError as ast.parse does, and
    SourceTooComplex (a SyntaxError) for a source too large or too deeply nested to parse."""
    if len(source) > MAX_SOURCE_BYTES:
        raise source_too_large(len(source), "characters")
    with _AST_LOCK:
        for attempt in range(_AST_RACE_RETRIES + 1):
            try:
                return ast.parse(source, filename=filename)
            except (RecursionError, MemoryError):
                raise SourceTooComplex("source too deeply nested: Python's parser gives up on it") from None
            except SystemError as exc:
                if "recursion depth mismatch" not in str(exc) or attempt == _AST_RACE_RETRIES:
                    raise
        raise AssertionError("unreachable")


def compile_python(source: str, filename: str = "<unknown>") -> None:
    """Compile to bytecode without running anything; raises as parse_python does."""
    if len(source) > MAX_SOURCE_BYTES:
        raise source_too_large(len(source), "characters")
    with _AST_LOCK:
        try:
            compile(source, filename, "exec")
        except (RecursionError, MemoryError):
            raise SourceTooComplex("source too deeply nested: Python's compiler gives up on it") from None


def sha256_text(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")  # keeps ("ab", "c") and ("a", "bc") apart
    return h.hexdigest()


def atomic_write_text(path: Path, text: str) -> None:
    """Write through a temp file and rename, so a reader never sees half a file. The file gets the mode any
    new file gets (0644 under the usual umask), not mkstemp's private 0600: reports and exports are shared."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for open()
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def one_line(text: str | None, limit: int = 300) -> str | None:
    """First meaningful line of an error text, bounded: the `error` field is one line by contract."""
    if text is None:
        return None
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    if not lines:
        return None
    line = lines[-1] if lines[0].startswith("Traceback") else lines[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def tail(text: str, max_chars: int = 4000) -> str:
    return text if len(text) <= max_chars else "..." + text[-max_chars:]
