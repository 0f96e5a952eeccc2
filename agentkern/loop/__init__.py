"""The optimisation loop: graph, state, dependencies, nodes and progress (agentkern optimize)."""
