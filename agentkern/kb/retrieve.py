"""Retrieval for the agent loop: the documents the planner and coder see for a problem, target and backend.

A run asks the same question every iteration (the problem, target and backend do not change), so the answer
is computed once per run and kept: the prompts stay stable across iterations and a resumed run sees the
same documents as long as the knowledge base has not changed.
"""

from __future__ import annotations

import re

from agentkern.kb.sources import TARGETS

# Lines of a KernelBench problem file that say nothing about what it computes.
_BOILERPLATE = re.compile(
    r"^\s*(import |from \S+ import |def get_inputs|def get_init_inputs|return \[|super\(\)|"
    r"def __init__|class Model)"
)


def problem_query(problem_source: str, name: str, target_label: str, backend: str) -> str:
    """The query text for a problem: its name, the target and backend, and the lines of the reference that
    compute something (imports and input builders dropped: they are the same in every problem)."""
    lines = [ln for ln in problem_source.splitlines() if ln.strip() and not _BOILERPLATE.match(ln)]
    return f"{name} {backend} kernel on {target_label}\n" + "\n".join(lines)


class Retriever:
    """Callable: retriever(problem_source, target, backend, name) -> documents, then exemplar kernels.

    Hardware documents and guides are ranked apart from exemplar kernels: a problem written as PyTorch code
    resembles kernels more than prose, and would otherwise crowd the guides out.
    """

    def __init__(self, kb=None, k_docs: int = 3, k_exemplars: int = 1) -> None:
        self._kb = kb
        self.k_docs = k_docs
        self.k_exemplars = k_exemplars
        self._cache: dict[tuple, list[dict]] = {}

    @property
    def kb(self):
        if self._kb is None:  # opened on first use: a run with the built-in policy never pays for chromadb
            from agentkern.kb.store import KnowledgeBase

            self._kb = KnowledgeBase()
        return self._kb

    def __call__(self, problem_source: str, target, backend: str, name: str = "") -> list[dict]:
        key = (problem_source, target.name, backend, name)
        if key not in self._cache:
            text = problem_query(problem_source, name, target.display_name, backend)
            tname = target.name if target.name in TARGETS else None
            docs = self.kb.query(text, tname, backend, k=self.k_docs, kinds=("target", "guide"))
            kernels = (
                self.kb.query(text, tname, backend, k=5 * self.k_exemplars, kinds=("exemplar",))
                if self.k_exemplars
                else []
            )
            self._cache[key] = docs + rank_exemplars(kernels, name)[: self.k_exemplars]
        return self._cache[key]


def rank_exemplars(kernels: list[dict], op: str) -> list[dict]:
    """Kernels for the same op first, and among those the ones measured in a run (`kb add --from-run`), the
    fastest first: the next run on a target starts from the best kernel known for it. Then by similarity."""

    def key(doc: dict):
        measured = doc.get("origin") == "run"
        return (
            doc.get("op") != op,
            not measured,
            -float(doc.get("speedup") or 0) if measured else 0.0,
            doc["distance"],
        )

    return sorted(kernels, key=key)


def brief(doc: dict) -> dict:
    """What the run store keeps about a retrieved document: enough to find it again and to show it."""
    return {
        "id": doc["id"],
        "title": doc["title"],
        "kind": doc["kind"],
        "section": doc.get("section", ""),
        "distance": doc.get("distance"),
    }
