"""The five agents, one node each. A node is a plain function `run(state, runtime) -> partial state update`;
what it needs from outside (the policy, the harness, the run store: loop/deps.Deps) is `runtime.context`."""
