"""The policy interface: the brain behind the planner and coder nodes, beside models.base.ChatModel.

Each iteration the planner node asks `plan(ctx)` for a plan and the coder node asks `write(plan, ctx, beam)`
for the beam's drafts; both see the same PolicyContext (loop/nodes/planner.context()). Two policies ship:
BuiltinPolicy (policies/builtin/: templates and a parameter search, no network) and LLMPolicy (policies/llm.py:
a ChatModel writes the code). A Protocol, so tests' stand-ins need not inherit from it.
"""

from __future__ import annotations

from typing import Any, Protocol, TypedDict, runtime_checkable

from agentkern.types import Candidate, Draft, Elite, Plan, Target


class PolicyContext(TypedDict):
    """What planner and coder see. Built fresh from the run's state, so it is the same after a resume."""

    iteration: int
    stage: int  # 1: tiling and vectorisation; 2: + fusion and algorithm variants; 3: + fine scheduling
    elites: list[Elite]  # the best candidate of each strategy family, best first
    best: Candidate | None
    tried: list[dict[str, Any]]  # the parameters of every candidate so far (a policy proposes new ones)
    candidates: list[Candidate]  # every evaluated candidate, in order (an LLM's lineages: policies/lineage.py)
    beam: int  # coder calls this iteration (--beam): the planner proposes as many ideas
    feedback: str  # the critic's words on the last iteration
    problem_source: str
    target: Target
    backend: str
    run_id: str
    knowledge: list[dict[str, Any]]  # knowledge-base documents (agentkern.kb.Retriever); [] unless reads_knowledge


@runtime_checkable
class Policy(Protocol):
    """Plans an iteration and writes its candidates. Drafts without code carry an `error` saying why: the
    compiler node records it and the critic passes it on."""

    # True: planner.context() retrieves documents for this policy's prompts; False: the knowledge base is
    # never opened (the built-in policy's runs do not pay for it).
    reads_knowledge: bool

    def plan(self, ctx: PolicyContext) -> Plan:
        """The plan for iteration ctx["iteration"]: at least a one-line `summary`."""
        ...

    def write(self, plan: Plan, ctx: PolicyContext, beam: int) -> list[Draft]:
        """Up to `beam` drafts (strategy, params, parent, source, error); the coder node stamps id and
        iteration on them."""
        ...

    def read_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """The parameters of a draft's `params` its kernel reads at the problem's shapes (the built-in policy's
        code paths leave some unread: policies/builtin/kernel_paths.py); all of them by default. Optional: the
        loop calls it where a policy has it, for the run's explanation of the winning parameters."""
        return dict(params)
