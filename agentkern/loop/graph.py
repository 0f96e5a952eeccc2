"""build_graph(checkpointer): planner -> coder -> compiler -> profiler -> critic -> (planner | confirm -> END).

The nodes are plain functions of (state, runtime) in agentkern/loop/nodes/; what they need from outside
(loop/deps.Deps: the policy, the harness, the run store) is the graph's runtime context, given at each call:
`graph.invoke(input, config, context=deps)`. Nothing is built at import time: tests pass their own deps (a
scripted model, a fake evaluator) and the CLI passes the real ones. The context is not checkpointed, so a
resumed run (`invoke(None, config, context=deps)`) gets the deps of the process that resumes it.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from agentkern.loop.deps import Deps
from agentkern.loop.nodes import coder, confirm, critic, planner, profiler
from agentkern.loop.nodes import evaluator as compiler
from agentkern.loop.state import RunState


def after_critic(state: RunState) -> str:
    return "confirm" if state.get("stopped_because") else "planner"


def build_graph(checkpointer=None):
    graph = StateGraph(RunState, context_schema=Deps)
    graph.add_node("planner", planner.run)
    graph.add_node("coder", coder.run)
    graph.add_node("compiler", compiler.run)
    graph.add_node("profiler", profiler.run)
    graph.add_node("critic", critic.run)
    graph.add_node("confirm", confirm.run)
    graph.add_edge(START, "planner")
    graph.add_edge("planner", "coder")
    graph.add_edge("coder", "compiler")
    graph.add_edge("compiler", "profiler")
    graph.add_edge("profiler", "critic")
    graph.add_conditional_edges("critic", after_critic, ["planner", "confirm"])
    graph.add_edge("confirm", END)
    return graph.compile(checkpointer=checkpointer)
