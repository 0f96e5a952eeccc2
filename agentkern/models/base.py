"""The model interface every agent talks to: one chat call in, one `Reply` out.

Agents see `ChatModel`, never a provider. A call that failed for good raises `ModelError` (one line, naming
the model and the cause), which the agent loop turns into critic feedback. `extract_solution` pulls the
candidate `ModelNew` file out of a reply, or says in one line why it cannot (`NoCodeError`).

Standard library only: importing this module must stay cheap (`agentkern --help`).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agentkern.helpers import parse_python

__all__ = ["Reply", "ChatModel", "ModelError", "NoCodeError", "extract_solution", "Usage"]


@dataclass
class Reply:
    """One completed chat call."""

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0  # wall time of the whole call, retries and back-off included
    attempts: int = 1  # HTTP requests it took (1 = no retry)
    finish_reason: str | None = None  # "stop", "length" (cut off at max_tokens), ... as the provider says


@runtime_checkable
class ChatModel(Protocol):
    """Anything an agent can ask: litellm-backed, scripted (tests), ..."""

    name: str

    def complete(self, messages: list[dict], *, temperature: float = 0.2, max_tokens: int = 4096) -> Reply:
        """Send OpenAI-style `messages` ([{"role": ..., "content": ...}]); raise ModelError on failure."""
        ...


class ModelError(Exception):
    """A model call that failed for good (after any retries). `str(error)` is one line naming the model and
    the cause, e.g. "openai/gpt-x: HTTP 500 after 3 attempts: upstream overloaded"; never a traceback.

    Attributes for callers that want to branch: `model`, `kind` ("http", "timeout", "connection",
    "malformed", "exhausted", "error"), `status` (HTTP status or None), `attempts`, `retryable` (whether the
    cause was transient, i.e. trying again later may succeed)."""

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        kind: str = "error",
        status: int | None = None,
        attempts: int = 0,
        retryable: bool = False,
    ):
        super().__init__(one_line(message))
        self.model = model
        self.kind = kind
        self.status = status
        self.attempts = attempts
        self.retryable = retryable


def one_line(text: str, limit: int = 500) -> str:
    """Collapse whitespace (newlines included) and cap the length."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class NoCodeError(ValueError):
    """The reply holds no usable solution; the message (one line) says why, for the critic."""


# An opening or closing fence: any indent (blocks inside lists), 3+ backticks, an optional info string.
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*$")
_MODELNEW = re.compile(r"^[ \t]*class[ \t]+ModelNew\b", re.M)
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_PYTHON_TAGS = {"", "python", "python3", "py", "py3"}


@dataclass
class _Block:
    lang: str
    code: str
    line: int  # 1-based line of the opening fence in the reply
    closed: bool


def _fenced_blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        ticks = len(opening["ticks"])
        lang = opening["info"].split()[0].lower() if opening["info"].strip() else ""
        body: list[str] = []
        j = i + 1
        closed = False
        while j < len(lines):
            closing = _FENCE.match(lines[j])
            if closing and len(closing["ticks"]) >= ticks and not closing["info"].strip():
                closed = True
                break
            body.append(lines[j])
            j += 1
        blocks.append(_Block(lang, textwrap.dedent("\n".join(body)).strip("\n") + "\n", i + 1, closed))
        i = j + 1
    return blocks


def extract_solution(text: str) -> str:
    """The Python solution in a model reply: the last ```python (or unlabeled ```) block that defines
    `class ModelNew`. Raises NoCodeError, with a one-line reason, when there is no code block, when no
    block defines ModelNew, when the reply was cut off inside a block, or when the code does not parse.

    `<think>...</think>` sections (reasoning models) are ignored. A reply with no fence at all is accepted
    only when the whole reply is valid Python defining ModelNew (some local models answer with bare code)."""
    text = _THINK.sub("", text or "")
    blocks = _fenced_blocks(text)
    if not blocks:
        bare = textwrap.dedent(text).strip("\n") + "\n"
        if _MODELNEW.search(bare):
            try:
                parse_python(bare)
                return bare
            except SyntaxError:
                pass
        raise NoCodeError("no code block in the reply: put the solution in a ```python fenced block")

    python = [b for b in blocks if b.lang in _PYTHON_TAGS]
    complete = [b for b in python if b.closed and _MODELNEW.search(b.code)]
    unclosed = [b for b in blocks if not b.closed]  # at most one: an unclosed fence runs to the end
    if unclosed and (not complete or (unclosed[-1].lang in _PYTHON_TAGS and _MODELNEW.search(unclosed[-1].code))):
        b = unclosed[-1]
        raise NoCodeError(
            f"truncated reply: the code block opened on line {b.line} is never closed "
            "(the reply was probably cut off at max_tokens); send a shorter, complete solution"
        )
    if not complete:
        if python:
            raise NoCodeError("the code block does not define `class ModelNew` (KernelBench convention)")
        langs = ", ".join(sorted({b.lang for b in blocks}))
        raise NoCodeError(
            f"no Python code block (found only: {langs}); the solution must be a ```python block defining ModelNew"
        )

    code = complete[-1].code
    try:
        parse_python(code)
    except SyntaxError as e:
        where = f"line {e.lineno}" if e.lineno else "unknown line"
        src = ""
        if e.lineno and 0 < e.lineno <= len(code.splitlines()):
            src = code.splitlines()[e.lineno - 1].strip()
            src = f": {one_line(src, 80)!r}"
        raise NoCodeError(f"the code is not valid Python: {e.msg} at {where} of the code block{src}") from None
    return code


@dataclass
class Usage:
    """Running totals over many calls (a run, an agent, a whole suite)."""

    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    calls: int = 0

    def add(self, reply: Reply) -> Usage:
        self.tokens_in += reply.prompt_tokens
        self.tokens_out += reply.completion_tokens
        self.cost_usd += reply.cost_usd
        self.calls += 1
        return self

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out
