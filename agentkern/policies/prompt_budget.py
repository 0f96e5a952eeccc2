"""Prompts that fit the model's context window, and replies that fit what is left of it.

A local model's window is small (llama.cpp and Ollama serve 4096 tokens by default) and a request whose
prompt plus `max_tokens` exceeds it is refused with HTTP 400, so every call is budgeted before it is sent:
the prompt is rendered, measured, and trimmed until it leaves room for the agent's smallest useful reply,
least useful material first (the last retrieved documents, the oldest attempts of the lineage, then long
logs and feedback); the parent kernel and the problem are never cut. The reply's `max_tokens` is the
agent's own budget (a planner needs a few lines, a coder a file), capped by the room left. What was trimmed
is recorded with the call, for the trace.

Tokens are estimated from characters (no tokenizer is downloaded at run time). The first call assumes 2.5
characters a token (Gemma's tokenizer gives 2.3 on a C++ kernel, about 4 on English); each reply's
prompt_tokens then measures the model's own ratio for the next calls (LLMPolicy keeps it). Where even the
parent kernel's source does not fit, it is left out (the prompt says so) and the coder writes a whole file.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

CHARS_PER_TOKEN = 2.5  # until the model's replies have measured its ratio
TEMPLATE_OVERHEAD = 48  # the chat template's tokens around one user message
# The reply each agent asks for at most, and the least that is still useful: a planner's ideas are a few
# lines each; a coder's reply is a whole kernel file (or a diff).
REPLY_TOKENS = {"planner": 384, "coder": 4096}
PLANNER_TOKENS_PER_IDEA = 192
MIN_REPLY_TOKENS = {"planner": 96, "coder": 640}
SHORT_TEXT = 600  # characters a trimmed log or feedback keeps


class PromptTooLarge(Exception):
    """The prompt does not fit the window even after every trim: the call is not sent."""


def estimate(text: str, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    return math.ceil(len(text) / chars_per_token)


@dataclass
class Fitted:
    prompt: str
    max_tokens: int
    window: int | None
    prompt_tokens_estimate: int
    trimmed: list[str] = field(default_factory=list)

    def notes(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "max_tokens": self.max_tokens,
            "prompt_tokens_estimate": self.prompt_tokens_estimate,
            "trimmed": self.trimmed,
        }


def _short(text: str) -> str:
    from agentkern.policies.lineage import trim_middle

    return trim_middle(text, SHORT_TEXT)


def _trims(ctx: dict[str, Any]) -> list[tuple[str, Callable[[dict], bool]]]:
    """(what it does, trim(ctx) -> whether it changed anything), in the order they are tried; each may be
    applied several times (one document, one attempt at a time)."""

    def drop_document(c: dict) -> bool:
        if c.get("knowledge"):
            c["knowledge"] = c["knowledge"][:-1]
            return True
        return False

    def drop_attempt(c: dict) -> bool:
        for branch in c.get("branches") or []:
            if branch["attempts"]:
                branch["attempts"] = branch["attempts"][1:]
                return True
        return False

    def shorten_reports(c: dict) -> bool:
        changed = False
        for branch in c.get("branches") or []:
            for a in branch["attempts"]:
                if len(a.get("report") or "") > SHORT_TEXT + 64:
                    a["report"] = _short(a["report"])
                    changed = True
        return changed

    def shorten_feedback(c: dict) -> bool:
        if len(c.get("feedback") or "") > SHORT_TEXT + 64:
            c["feedback"] = _short(c["feedback"])
            return True
        return False

    def drop_source(key: str) -> Callable[[dict], bool]:
        """A trim that leaves out one branch's `key` kernel source ("parent", or a crossover's "other")."""

        def trim(c: dict) -> bool:
            for branch in c.get("branches") or []:
                if branch.get(key) and branch[key].get("source"):
                    branch[key] = {**branch[key], "source": None}
                    return True
            return False

        return trim

    return [
        ("retrieved documents", drop_document),
        ("lineage attempts", drop_attempt),
        ("failure reports", shorten_reports),
        ("critic feedback", shorten_feedback),
        ("the second parent's source", drop_source("other")),
        ("the parent kernel's source", drop_source("parent")),  # last: without it the coder starts over
    ]


def reply_budget(agent: str, ideas: int = 1) -> int:
    if agent == "planner":
        return min(REPLY_TOKENS["planner"] + PLANNER_TOKENS_PER_IDEA * (ideas - 1), 1024)
    return REPLY_TOKENS.get(agent, 2048)


def fit(
    agent: str,
    render: Callable[[dict], str],
    ctx: dict[str, Any],
    window: int | None,
    ideas: int = 1,
    chars_per_token: float = CHARS_PER_TOKEN,
) -> Fitted:
    """The rendered prompt and the reply's max_tokens for one call within `window` tokens (None: no limit
    known; nothing trimmed). `ctx` is not changed: trims work on a copy."""

    def estimate(text: str) -> int:  # noqa: F811 - this call's ratio
        return math.ceil(len(text) / chars_per_token)

    want = reply_budget(agent, ideas)
    prompt = render(ctx)
    if window is None:
        return Fitted(prompt, want, None, estimate(prompt))
    least = min(MIN_REPLY_TOKENS.get(agent, 256), want)
    work = _copy(ctx)
    trimmed: list[str] = []
    for what, trim in _trims(work):
        while estimate(prompt) + TEMPLATE_OVERHEAD + least > window and trim(work):
            prompt = render(work)
            trimmed.append(what)
        if estimate(prompt) + TEMPLATE_OVERHEAD + least <= window:
            break
    used = estimate(prompt) + TEMPLATE_OVERHEAD
    if used + least > window:
        raise PromptTooLarge(
            f"the {agent} prompt needs about {used} tokens, and with {least} for the reply that is more than the "
            f"model's {window}-token context window, even without "
            f"{', '.join(sorted(set(trimmed))) or 'anything that may be left out'}: use a model with a larger window "
            "(--context-window says what the server allows)"
        )
    summary = [f"{what} x{trimmed.count(what)}" if trimmed.count(what) > 1 else what for what in dict.fromkeys(trimmed)]
    return Fitted(prompt, min(want, window - used), window, estimate(prompt), summary)


def _copy(ctx: dict[str, Any]) -> dict[str, Any]:
    """Deep enough for the trims: the lists and dicts they change are new, the rest is shared."""
    out = dict(ctx)
    if "knowledge" in out:
        out["knowledge"] = list(out["knowledge"] or [])
    if out.get("branches"):
        out["branches"] = [{**b, "attempts": [dict(a) for a in b.get("attempts", [])]} for b in out["branches"]]
    return out
