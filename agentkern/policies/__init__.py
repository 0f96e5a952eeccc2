"""The brains behind the planner and the coder: an LLM through litellm (llm.py), or the built-in policy
(builtin.py) that needs no network. Both offer plan(ctx) -> dict and write(plan, ctx, beam) -> drafts."""
