"""The five agents, one node each. A node is a plain function `run(state, deps) -> partial state update`."""
