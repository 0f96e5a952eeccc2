"""Planner and coder backed by a chat model (any litellm model, or a scripted one in tests).

The planner sees the problem, the lineages' parents (policies/lineage.py) and what was tried from them, and
proposes one idea per branch of the beam (`STRATEGY:` lines). Each coder call improves one parent: its
prompt carries the parent's whole source and verdict and the lineage's memory, and the reply is a whole file
or a unified diff against the parent (policies/replies.py). Every prompt is fitted to the model's context
window first (policies/prompt_budget.py). The first iteration may start from a known kernel instead of the
model (policies/start.py): no tokens spent, and the model's first reply already refines a strong kernel.

A reply without usable code (no code block, a diff that does not apply, truncated, not Python), a prompt that
cannot fit, and a failed call become a draft with an error: the compiler records it and the next prompt
says why.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agentkern import backends
from agentkern.kb.retrieve import brief
from agentkern.models.base import ChatModel, ModelError, NoCodeError
from agentkern.policies import lineage, prompt_budget, prompts, replies
from agentkern.policies.base import Policy, PolicyContext
from agentkern.policies.start import Starter
from agentkern.types import Draft, Plan

STRATEGY_LINE = re.compile(r"^[\s*#>\d.)-]*STRATEGY[\s*_]*:[\s*_`]*([^\s`*]+)", re.M | re.I)


_WINDOW_ERROR = re.compile(r"context (length|window|size)|maximum context|exceed", re.I)


def _window_exceeded(exc: ModelError) -> bool:
    """A server's refusal of a request longer than its window (HTTP 400 "maximum context length ...")."""
    return exc.status == 400 and bool(_WINDOW_ERROR.search(str(exc)))


def ideas_in(text: str) -> list[dict[str, str]]:
    """The planner's ideas: each `STRATEGY: family/variant` line and the lines up to the next one."""
    found = list(STRATEGY_LINE.finditer(text))
    return [
        {
            "strategy": m.group(1).strip("*_:."),
            "text": text[m.start() : found[i + 1].start() if i + 1 < len(found) else None].strip(),
        }
        for i, m in enumerate(found)
    ]


class LLMPolicy(Policy):
    reads_knowledge = True  # planner.context() retrieves documents for the prompts' "Reference material"

    def __init__(
        self,
        model: ChatModel,
        record: Callable[..., None],
        *,
        window: int | None = None,
        window_source: str = "",
        starter: Starter | None = None,
    ) -> None:
        self.model = model
        # record(agent, iteration, prompt, reply | None, error | None, retrieved=[...], notes={...})
        self.record = record
        self.window = window
        self.window_source = window_source
        self.starter = starter
        # The model's characters per prompt token, measured from its replies (prompt_budget.py)
        self.chars_per_token = prompt_budget.CHARS_PER_TOKEN

    def _ask(
        self, agent: str, ctx: dict[str, Any], template: str, ideas: int = 1, branch: int | None = None
    ) -> tuple[str | None, str | None, int, float]:
        """(reply text, error, tokens, cost) of one call, its prompt fitted to the window. `branch`: the coder's
        draft index, recorded so the trace pairs each call with the candidate it became."""
        retrieved = [brief(doc) for doc in ctx.get("knowledge") or []]
        iteration = ctx["iteration"]
        for last_try in (False, True):
            try:
                fitted = prompt_budget.fit(
                    agent,
                    lambda c: prompts.render(template, **c),
                    ctx,
                    self.window,
                    ideas=ideas,
                    chars_per_token=self.chars_per_token,
                )
            except prompt_budget.PromptTooLarge as exc:
                prompt = prompts.render(template, **ctx)
                self.record(
                    agent, iteration, prompt, None, str(exc), retrieved=retrieved, notes=self._notes(None, branch)
                )
                return None, str(exc), 0, 0.0
            notes = self._notes(fitted, branch)
            try:
                reply = self.model.complete([{"role": "user", "content": fitted.prompt}], max_tokens=fitted.max_tokens)
            except ModelError as exc:
                self.record(agent, iteration, fitted.prompt, None, str(exc), retrieved=retrieved, notes=notes)
                if last_try or not _window_exceeded(exc):
                    return None, str(exc), 0, 0.0
                # The estimate undercounted this model's tokens: measure again, smaller, once (not a blind retry:
                # a shorter request)
                self.chars_per_token *= 0.7
                continue
            break
        if reply.prompt_tokens > 0:  # the model's own count: the ratio for the next calls
            self.chars_per_token = max(1.0, min(6.0, 0.95 * len(fitted.prompt) / reply.prompt_tokens))
        if reply.finish_reason:
            notes["finish_reason"] = reply.finish_reason
        self.record(agent, iteration, fitted.prompt, reply, None, retrieved=retrieved, notes=notes)
        return reply.text, None, reply.prompt_tokens + reply.completion_tokens, reply.cost_usd

    def _notes(self, fitted: prompt_budget.Fitted | None, branch: int | None = None) -> dict[str, Any]:
        notes = fitted.notes() if fitted else {"window": self.window}
        if branch is not None:
            notes["branch"] = branch
        notes["chars_per_token"] = round(self.chars_per_token, 2)
        if self.window_source:
            notes["window_from"] = self.window_source
        return notes

    def starts_from_kernel(self, candidates: list) -> bool:
        """True while the next iteration is the --start-from kernel's: it asks the model nothing."""
        return self.starter is not None and not candidates

    def plan(self, ctx: PolicyContext) -> Plan:
        if self.starts_from_kernel(ctx.get("candidates") or []):
            return self.starter.plan()
        beam = ctx.get("beam", 1)
        branches = lineage.branches(ctx.get("candidates") or [], beam)
        text, error, tokens, cost = self._ask("planner", {**ctx, "branches": branches, "ideas": beam}, "planner", beam)
        ideas = ideas_in(text or "") or [{"strategy": f"llm/{ctx['iteration']}", "text": text or ""}]
        return {
            "summary": ", ".join(i["strategy"] for i in ideas) + (f" (planner failed: {error})" if error else ""),
            "strategy": ideas[0]["strategy"],
            "text": text or "",
            "ideas": ideas,
            "parents": [b["parent"]["id"] if b["parent"] else None for b in branches],
            "tokens": tokens,
            "cost_usd": cost,
        }

    def write(self, plan: Plan, ctx: PolicyContext, beam: int) -> list[Draft]:
        if plan.get("start") and self.starter is not None:
            return self.starter.drafts()
        coder_prompt = backends.get(ctx["backend"]).prompt
        ideas = plan.get("ideas") or [{"strategy": plan.get("strategy", "llm"), "text": plan.get("text", "")}]
        branches = lineage.branches(ctx.get("candidates") or [], beam)
        drafts: list[Draft] = []
        for j, branch in enumerate(branches):
            idea = ideas[j % len(ideas)]
            coder_ctx = {**ctx, "plan_text": idea["text"], "branches": [branch]}
            text, error, tokens, cost = self._ask("coder", coder_ctx, coder_prompt, branch=j)
            parent = branch["parent"]
            source, form = None, None
            if text is not None:
                try:
                    source, form = replies.solution(text, parent["source"] if parent else None)
                except NoCodeError as exc:
                    error = f"reply without usable code: {exc}"
            other = branch.get("other")
            drafts.append(
                {
                    "strategy": f"crossover:{parent['id']}+{other['id']}/{j}"
                    if other and parent
                    else f"{idea['strategy']}/{j}",
                    "source": source,
                    "error": error,
                    "params": {},
                    "parent": parent["id"] if parent else None,
                    "reply_form": form,
                    **({"other_parent": other["id"]} if other else {}),
                    "tokens": tokens,
                    "cost_usd": cost,
                }
            )
        return drafts
