"""build_graph(deps): planner -> coder -> compiler -> profiler -> critic -> (planner | END).

Nothing is built at import time: tests pass their own deps (a scripted model, a fake evaluator) and the
CLI passes the real ones. Nodes are plain functions of (state, deps) in agentkern/agents/.
"""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START, StateGraph

from agentkern.loop.nodes import coder, critic, planner, profiler
from agentkern.loop.nodes import evaluator as compiler
from agentkern.loop.state import RunState


def after_critic(state: RunState) -> str:
    return END if state.get("stopped_because") else "planner"


def build_graph(deps, checkpointer=None):
    graph = StateGraph(RunState)
    for name, node in (
        ("planner", planner.run),
        ("coder", coder.run),
        ("compiler", compiler.run),
        ("profiler", profiler.run),
        ("critic", critic.run),
    ):
        graph.add_node(name, partial(node, deps=deps))
    graph.add_edge(START, "planner")
    graph.add_edge("planner", "coder")
    graph.add_edge("coder", "compiler")
    graph.add_edge("compiler", "profiler")
    graph.add_edge("profiler", "critic")
    graph.add_conditional_edges("critic", after_critic, ["planner", END])
    return graph.compile(checkpointer=checkpointer)
