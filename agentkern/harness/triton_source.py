"""A candidate's Triton kernels, taken out of its file without running the file.

The compiler for the target GPU (triton_compile.py) must not believe the candidate's process: a process
that imported the candidate could hand back any PTX or resource count. So the kernels are rebuilt from the
source text alone. The file is reduced to what a `@triton.jit` function needs to be compiled: imports of
triton (and math), module constants that are plain literals (or `tl.constexpr(<literal>)`), and the jit
functions themselves, stripped of every other decorator (autotune, heuristics: the launch's recorded
parameters stand in for them). Running that reduced text defines functions and nothing else, provided no
default value, annotation or decorator argument is code: anything that is not a literal, a name or an
attribute there refuses the reduction (`Unreducible`), which is said in the verdict, never silently skipped.
No triton import here: the reduced text is executed by the compile worker.
"""

from __future__ import annotations

import ast

ALLOWED_MODULES = ("triton", "math")


class Unreducible(ValueError):
    """The file's kernels cannot be taken out of it without running its code; the message says why."""


def _is_triton_jit(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    name = ast.unparse(target)
    return name in ("triton.jit", "jit", "tl.jit") or name.endswith(".jit")


def _plain(node: ast.expr | None) -> bool:
    """A literal, a name or an attribute chain: nothing that runs code when evaluated."""
    if node is None:
        return True
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _plain(node.operand)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_plain(e) for e in node.elts)
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _plain(node.value) and isinstance(node.value, (ast.Name, ast.Attribute))
    return False


_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift, ast.Pow)


def _literal_constant(node: ast.expr, known: frozenset[str] = frozenset()) -> bool:
    """`3`, `-1.5`, `"ieee"`, `(1, 2)`, `tl.constexpr(<literal>)`, or arithmetic on numbers and constants kept
    before it (`2 ** 10`, `BLOCK * 2`: a power's exponent at most 64, so nothing can take long to evaluate)."""
    if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("constexpr") and not node.keywords:
        return len(node.args) == 1 and _literal_constant(node.args[0], known)
    if isinstance(node, ast.Name):
        return node.id in known
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _literal_constant(node.operand, known)
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC):
        if isinstance(node.op, ast.Pow) and not (
            isinstance(node.right, ast.Constant) and isinstance(node.right.value, int) and abs(node.right.value) <= 64
        ):
            return False
        both = (node.left, node.right)
        return all(
            isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) or _literal_constant(n, known)
            for n in both
        )
    try:
        ast.literal_eval(node)
        return True
    except ValueError:
        return False


def _check_function(fn: ast.FunctionDef) -> None:
    args = fn.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if not _plain(arg.annotation):
            raise Unreducible(f"{fn.name}: the annotation of {arg.arg!r} is code, not a type")
    for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
        if not _literal_constant(default):
            raise Unreducible(f"{fn.name}: a default value is code, not a literal ({ast.unparse(default)[:60]})")
    if args.vararg or args.kwarg:
        raise Unreducible(f"{fn.name}: *args or **kwargs in a jit function")
    if not _plain(fn.returns):
        raise Unreducible(f"{fn.name}: its return annotation is code")


def _jit_decorator(fn: ast.FunctionDef) -> ast.expr | None:
    found = [d for d in fn.decorator_list if _is_triton_jit(d)]
    if not found:
        return None
    jit = found[0]
    if isinstance(jit, ast.Call):
        if jit.args or not all(_literal_constant(k.value) for k in jit.keywords):
            raise Unreducible(f"{fn.name}: triton.jit's arguments are code, not literals")
    return jit


def reduce_source(source: str) -> tuple[str, list[str]]:
    """(the reduced module's text, the names of its jit functions). Raises Unreducible."""
    from agentkern.helpers import parse_python

    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError) as exc:
        raise Unreducible(f"the file does not parse: {type(exc).__name__}") from None
    kept: list[ast.stmt] = []
    kernels: list[str] = []
    constants: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            if all(a.name.split(".")[0] in ALLOWED_MODULES for a in node.names):
                kept.append(node)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").split(".")[0] in ALLOWED_MODULES:
                kept.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and all(isinstance(t, ast.Name) for t in targets):
                literal = _literal_constant(node.value, frozenset(constants))
                if literal and (isinstance(node, ast.Assign) or _plain(node.annotation)):
                    kept.append(node)
                    constants.update(t.id for t in targets)
        elif isinstance(node, ast.FunctionDef):
            jit = _jit_decorator(node)
            if jit is not None:
                _check_function(node)
                node.decorator_list = [jit]
                kept.append(node)
                kernels.append(node.name)
    if not kernels:
        raise Unreducible("no @triton.jit function at the file's top level")
    return ast.unparse(ast.Module(body=kept, type_ignores=[])), kernels
