"""A coder's reply as a solution file: a whole file (```python, defining ModelNew) or a unified diff
(```diff) against the parent kernel the prompt showed.

Diffs are applied by GNU patch (fuzzy context matching, hunks found at an offset), after two repairs that
models need often: hunk headers whose line counts do not match the hunk's body (recounted), and a diff without
its `---`/`+++` header lines (added). A diff that still does not apply, or applies to something that is not a
solution, raises NoCodeError with patch's own words: feedback for the next prompt, never a crash.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from agentkern.helpers import parse_python
from agentkern.models.base import NoCodeError, extract_solution

_FENCED_DIFF = re.compile(r"^[ \t]*```[ \t]*(diff|patch|udiff)[ \t]*\n(?P<body>.*?)^[ \t]*```[ \t]*$", re.M | re.S)
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$")
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
PATCH_TIMEOUT_S = 30


def solution(text: str, parent_source: str | None) -> tuple[str, str]:
    """(the solution file, "file" | "diff") from a coder's reply. A whole file wins over a diff when the reply
    has both. Raises NoCodeError, in one line, when neither gives a solution."""
    text = _THINK.sub("", (text or "").replace("\r\n", "\n"))
    try:
        return extract_solution(text), "file"
    except NoCodeError as no_file:
        diffs = diffs_in(text)
        if not diffs:
            raise no_file
    if parent_source is None:
        raise NoCodeError("the reply is a diff, but there is no parent kernel to apply it to: send the whole file")
    patched = apply_diff(parent_source, diffs[-1])
    try:
        parse_python(patched)
    except SyntaxError as e:
        raise NoCodeError(f"the diff applied, but the result is not valid Python: {e.msg} at line {e.lineno}") from None
    if not re.search(r"^[ \t]*class[ \t]+ModelNew\b", patched, re.M):
        raise NoCodeError("the diff applied, but the result no longer defines `class ModelNew`")
    return patched, "diff"


_HUNK_START = re.compile(r"^@@ -\d+", re.M)
_DIFF_START = re.compile(r"^(--- \S.*\n\+\+\+ |@@ -\d+)", re.M)


def diffs_in(text: str) -> list[str]:
    """The unified diffs in a reply: ```diff (or patch, udiff) blocks; else any fenced block holding a hunk
    (models label diffs ```python too); else, unfenced, the text from its first `---`/`@@` line on (GNU
    patch skips what follows a diff)."""
    labelled = [m.group("body") for m in _FENCED_DIFF.finditer(text)]
    if labelled:
        return labelled
    from agentkern.models.base import _fenced_blocks

    fenced = [b.code for b in _fenced_blocks(text) if _HUNK_START.search(b.code)]
    if fenced:
        return fenced
    start = _DIFF_START.search(text)
    return [text[start.start() :]] if start and _HUNK_START.search(text) else []


def repaired(diff: str) -> str:
    """The diff with each hunk header's line counts taken from its body and file headers added if missing."""
    lines = diff.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _HUNK.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        body: list[str] = []
        i += 1
        while i < len(lines) and not _HUNK.match(lines[i]) and not lines[i].startswith(("--- ", "+++ ")):
            body.append(lines[i])
            i += 1
        while body and not body[-1]:
            body.pop()  # blank lines after the hunk (before the closing fence): not context
        body = [b or " " for b in body]  # a blank context line whose leading space was stripped
        old = sum(1 for b in body if b[:1] in (" ", "-"))
        new = sum(1 for b in body if b[:1] in (" ", "+"))
        out.append(f"@@ -{m.group(1)},{old} +{m.group(2)},{new} @@{m.group(3)}")
        out.extend(body)
    if not any(line.startswith("--- ") for line in out):
        out = ["--- a/solution.py", "+++ b/solution.py", *out]
    return "\n".join(out) + "\n"


def apply_diff(parent_source: str, diff: str) -> str:
    """`parent_source` with `diff` applied (GNU patch). Raises NoCodeError saying which hunks failed."""
    patch = shutil.which("patch")
    if patch is None:
        raise NoCodeError("the reply is a diff and GNU patch is not installed here: send the whole file")
    with tempfile.TemporaryDirectory(prefix="agentkern-patch-") as folder:
        original = Path(folder) / "solution.py"
        original.write_text(parent_source)
        result = Path(folder) / "patched.py"
        try:
            proc = subprocess.run(
                [
                    patch,
                    "--batch",
                    "--forward",
                    "--fuzz=3",
                    "--ignore-whitespace",  # context lines whose spacing the model changed still match
                    "-o",
                    str(result),
                    "-r",
                    str(Path(folder) / "rejects"),
                    str(original),
                ],
                input=repaired(diff),
                capture_output=True,
                text=True,
                timeout=PATCH_TIMEOUT_S,
                cwd=folder,
            )
        except subprocess.TimeoutExpired:
            raise NoCodeError("the diff could not be applied (patch timed out): send the whole file") from None
        said = " ".join(
            re.sub(r"\s*--\s*saving rejects to file \S+", "", line).strip()
            for line in (proc.stdout + proc.stderr).splitlines()
            if line.strip() and not line.startswith("patching file")
        )
        if proc.returncode != 0 or not result.is_file():
            raise NoCodeError(
                f"the diff does not apply to the parent kernel: {said[:400] or 'patch failed'}; "
                "send a diff against the parent exactly as shown, or the whole file"
            )
        return result.read_text()
