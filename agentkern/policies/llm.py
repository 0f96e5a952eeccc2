"""Planner and coder backed by a chat model (any litellm model, or a scripted one in tests).

A reply without usable code (no code block, no ModelNew, truncated, not Python) and a failed call become a
draft with an error: the compiler records it and the critic's feedback tells the next coder why.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agentkern import backends
from agentkern.kb.retrieve import brief
from agentkern.models.base import ChatModel, ModelError, NoCodeError, extract_solution
from agentkern.policies import prompts
from agentkern.policies.base import Policy, PolicyContext
from agentkern.types import Draft, Plan

STRATEGY_LINE = re.compile(r"^\s*STRATEGY:\s*(\S+)", re.M)


class LLMPolicy(Policy):
    reads_knowledge = True  # planner.context() retrieves documents for the prompts' "Reference material"

    def __init__(self, model: ChatModel, record: Callable[..., None]) -> None:
        self.model = model
        # record(agent, iteration, prompt, reply | None, error | None, retrieved=[documents in the prompt])
        self.record = record

    def _ask(
        self, agent: str, iteration: int, prompt: str, knowledge: list | None = None
    ) -> tuple[str | None, str | None, int, float]:
        retrieved = [brief(doc) for doc in knowledge or []]
        try:
            reply = self.model.complete([{"role": "user", "content": prompt}])
        except ModelError as exc:
            self.record(agent, iteration, prompt, None, str(exc), retrieved=retrieved)
            return None, str(exc), 0, 0.0
        self.record(agent, iteration, prompt, reply, None, retrieved=retrieved)
        return reply.text, None, reply.prompt_tokens + reply.completion_tokens, reply.cost_usd

    def plan(self, ctx: PolicyContext) -> Plan:
        prompt = prompts.render("planner", **ctx)
        text, error, tokens, cost = self._ask("planner", ctx["iteration"], prompt, ctx.get("knowledge"))
        text = text or ""
        found = STRATEGY_LINE.search(text)
        strategy = found.group(1) if found else f"llm/{ctx['iteration']}"
        return {
            "summary": f"{strategy}" + (f" (planner failed: {error})" if error else ""),
            "strategy": strategy,
            "text": text,
            "tokens": tokens,
            "cost_usd": cost,
        }

    def write(self, plan: Plan, ctx: PolicyContext, beam: int) -> list[Draft]:
        drafts: list[Draft] = []
        coder_prompt = backends.get(ctx["backend"]).prompt
        for j in range(beam):
            prompt = prompts.render(coder_prompt, plan_text=plan.get("text", ""), **ctx)
            text, error, tokens, cost = self._ask("coder", ctx["iteration"], prompt, ctx.get("knowledge"))
            source = None
            if text is not None:
                try:
                    source = extract_solution(text)
                except NoCodeError as exc:
                    error = f"reply without usable code: {exc}"
            drafts.append(
                {
                    "strategy": f"{plan['strategy']}/{j}",
                    "source": source,
                    "error": error,
                    "params": {},
                    "parent": None,
                    "tokens": tokens,
                    "cost_usd": cost,
                }
            )
        return drafts
