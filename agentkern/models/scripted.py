"""A model that replays a script: for tests, and for demos that must not touch a network.

In the spirit of simonw/llm's mock model: give it a queue of replies and it hands them out in order,
recording what it was asked.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable, Iterable

from .base import ModelError, Reply

Scripted = str | Reply | BaseException | type | Callable[[list[dict]], str | Reply]


class ScriptedModel:
    """`ScriptedModel(replies)`, each item one of:

    - a str: returned as a Reply (token counts ~ characters // 4, no cost, finish_reason "stop");
    - a Reply: returned as is;
    - an exception instance (or class): raised, e.g. ModelError("...") to play a failed call;
    - a callable(messages) -> str | Reply: called with the messages, for replies that depend on the prompt.

    `history` holds a copy of every messages list it was called with (failed calls included);
    `calls` the keyword arguments of each call. When the queue is empty it raises
    ModelError("scripted model: no replies left")."""

    def __init__(self, replies: Iterable[Scripted] = (), *, name: str = "scripted"):
        self.name = name
        self.replies: deque[Scripted] = deque(replies)
        self.history: list[list[dict]] = []
        self.calls: list[dict] = []

    def add(self, *replies: Scripted) -> ScriptedModel:
        self.replies.extend(replies)
        return self

    def complete(self, messages: list[dict], *, temperature: float = 0.2, max_tokens: int = 4096) -> Reply:
        self.history.append(copy.deepcopy(messages))
        self.calls.append({"temperature": temperature, "max_tokens": max_tokens})
        if not self.replies:
            raise ModelError("scripted model: no replies left", model=self.name, kind="exhausted")
        item = self.replies.popleft()
        if isinstance(item, BaseException) or (isinstance(item, type) and issubclass(item, BaseException)):
            raise item
        if callable(item) and not isinstance(item, (str, Reply)):
            item = item(messages)
        if isinstance(item, Reply):
            return item
        if isinstance(item, str):
            prompt_chars = sum(len(str(m.get("content") or "")) for m in messages)
            return Reply(
                text=item,
                model=self.name,
                prompt_tokens=prompt_chars // 4,
                completion_tokens=len(item) // 4,
                cost_usd=0.0,
                latency_s=0.0,
                attempts=1,
                finish_reason="stop",
            )
        raise TypeError(f"scripted model: cannot play a {type(item).__name__} (want str, Reply, exception or callable)")

    def __repr__(self) -> str:
        return f"ScriptedModel(name={self.name!r}, left={len(self.replies)}, calls={len(self.history)})"
