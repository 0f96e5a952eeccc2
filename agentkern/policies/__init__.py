"""The brains behind the planner and the coder: an LLM through litellm (llm.py), or the built-in policy
(builtin/) that needs no network. Both implement base.Policy: plan(ctx) -> Plan and write(plan, ctx, beam)
-> drafts."""
