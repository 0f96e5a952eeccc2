"""No import cycle inside agentkern/: every import counts, at module level or inside a function, because a
function-level import still ties the two modules together (worker -> recognize -> worker was one)."""

import ast
import json
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "agentkern"


def module_names(package: Path) -> dict[str, Path]:
    names = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _imported(module: str, node: ast.AST, modules: dict[str, Path]) -> list[str]:
    """The agentkern modules an import statement loads (`from pkg import sub` loads pkg.sub)."""
    if isinstance(node, ast.Import):
        wanted = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:  # relative: from the module's package, one level up per extra dot
            package = module.split(".") if modules[module].name == "__init__.py" else module.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join(package + ([node.module] if node.module else []))
        wanted = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    found = []
    for name in wanted:
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in modules and name.startswith("agentkern"):
            found.append(name)
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                graph[module].update(t for t in _imported(module, node, modules) if t != module)
    # Importing a.b.c runs a/__init__ and a/b/__init__ first (a module inside a package does not re-enter it).
    for module, targets in graph.items():
        for target in list(targets):
            parts = target.split(".")
            for i in range(2, len(parts)):
                parent = ".".join(parts[:i])
                if parent in modules and not module.startswith(parent + "."):
                    targets.add(parent)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle_and_nothing_else():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_function_level_and_package_imports_are_edges(tmp_path):
    pkg = tmp_path / "agentkern"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from agentkern.sub import one\n")
    (pkg / "sub" / "one.py").write_text("def f():\n    from agentkern import two\n")
    (pkg / "two.py").write_text("from agentkern.sub.one import f\n")
    graph = import_graph(module_names(pkg))
    assert "agentkern.two" in graph["agentkern.sub.one"]
    assert "agentkern.sub" in graph["agentkern.two"]  # importing agentkern.sub.one runs agentkern/sub/__init__
    assert cycles(graph) == [["agentkern.sub", "agentkern.sub.one", "agentkern.two"]]


def test_agentkern_has_no_import_cycle():
    modules = module_names(PACKAGE)
    assert len(modules) > 50
    found = cycles(import_graph(modules))
    assert not found, "import cycles inside agentkern/: " + "; ".join(" <-> ".join(c) for c in found)


# What the sandboxed worker imports: its modes, each resolved as the worker resolves it (worker._mode).
WORKER_IMPORTS = """
import importlib, json, sys
from agentkern.harness import worker
modes = {name: callable(worker._mode(name)) for name in worker.MODES}
print(json.dumps({"modes": modes, "loaded": sorted(m for m in sys.modules if m.startswith("agentkern"))}))
"""


def test_the_worker_side_loads_no_parent_side_module():
    """The worker and its modes never load evaluate, sandbox or jobs (agentkern's side of a job): importing
    a harness module must not run harness/__init__ into them."""
    out = subprocess.run([sys.executable, "-c", WORKER_IMPORTS], capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    assert report["modes"] and all(report["modes"].values()), report["modes"]
    parent_side = {"agentkern.harness.evaluate", "agentkern.harness.sandbox", "agentkern.harness.jobs"}
    assert not parent_side & set(report["loaded"]), sorted(parent_side & set(report["loaded"]))
