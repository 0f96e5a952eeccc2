"""Find and validate problem and solution files (KernelBench format) without running them.

The parent process never imports a problem or a solution: both are checked here by parsing, and only the
sandboxed worker executes them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from agentkern.config import dataset_dir
from agentkern.errors import UserError
from agentkern.helpers import MAX_SOURCE_BYTES, SourceTooComplex, parse_python, source_too_large

PROBLEM_NAMES = ("Model", "get_inputs", "get_init_inputs")


@dataclass(frozen=True)
class SourceFile:
    path: Path
    source: str
    tree: ast.Module
    # Why the file does not parse (a candidate's compile_error), None when it does. A candidate too large
    # to read has source "" and this error.
    error: SyntaxError | None = None


def problem_dir() -> Path:
    return dataset_dir() / "problems"


def known_problems() -> list[str]:
    return sorted(p.stem for p in problem_dir().glob("*.py") if not p.name.startswith("_"))


def resolve_problem(op_or_path: str) -> Path:
    """An op name (`softmax`) resolves to kernels_dataset/problems/softmax.py; a path is taken as is."""
    path = Path(op_or_path).expanduser()
    is_path = path.suffix == ".py" or "/" in op_or_path or path.is_file()
    shipped = problem_dir() / f"{op_or_path}.py"
    if not is_path and shipped.is_file():  # an op name, even where a folder of that name is in the way
        return shipped.resolve()
    if path.is_dir():
        raise UserError(
            f"{op_or_path} is a directory, not a problem file: give one of its .py files "
            "(`agentkern bench` takes a folder of problems)"
        )
    if is_path:
        if not path.is_file():
            raise UserError(f"problem file not found: {op_or_path}")
        return path.resolve()
    names = ", ".join(known_problems()) or "(none shipped)"
    raise UserError(f"unknown problem '{op_or_path}': not a file, and not one of: {names}")


def _parse(path: Path, what: str) -> SourceFile:
    if path.is_dir():
        raise UserError(f"{what} {path} is a directory, not a file")
    if not path.is_file():
        raise UserError(f"{what} file not found: {path}")
    try:
        size = path.stat().st_size
        # Never read a huge file whole: a candidate can be gigabytes (agentkern would hold it all in memory).
        source = "" if size > MAX_SOURCE_BYTES else path.read_text()
        error = source_too_large(size) if size > MAX_SOURCE_BYTES else None
        tree = parse_python(source, filename=str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {what} file {path}: {exc}") from None
    except SyntaxError as exc:
        error = exc
    if error is not None:
        if what == "problem":
            raise UserError(f"problem file {path} is not valid Python: {syntax_error_text(error)}") from None
        # A candidate with a syntax error is a verdict (compile_error), not bad input: keep an empty tree.
        tree = ast.Module(body=[], type_ignores=[])
    return SourceFile(path=path.resolve(), source=source, tree=tree, error=error)


def syntax_error_text(exc: SyntaxError) -> str:
    """One line: `line N: message`, or the message alone where there is no line (a file too large or too deep)."""
    if isinstance(exc, SourceTooComplex) or exc.lineno is None:
        return str(exc.msg)
    return f"line {exc.lineno}: {exc.msg}"


def top_level_names(tree: ast.Module) -> set[str]:
    """Names a module defines at top level: classes, functions, assignments and imports."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def load_problem(op_or_path: str) -> SourceFile:
    problem = _parse(resolve_problem(op_or_path), "problem")
    missing = [n for n in PROBLEM_NAMES if n not in top_level_names(problem.tree)]
    if missing:
        raise UserError(
            f"{problem.path} is not a KernelBench problem: it lacks {', '.join(missing)} "
            "(a problem defines class Model(nn.Module), get_inputs() and get_init_inputs())"
        )
    return problem


def load_solution(path: str | Path) -> SourceFile:
    solution = _parse(Path(path).expanduser(), "solution")
    # A file that failed to parse keeps an empty tree; look for the class in the text instead, so that a
    # candidate with a syntax error still gets its compile_error verdict.
    # One too large to read gets its compile_error verdict without a look inside.
    has_model_new = "ModelNew" in top_level_names(solution.tree) or (
        solution.error is not None and ("class ModelNew" in solution.source or not solution.source)
    )
    if not has_model_new:
        raise UserError(f"{solution.path} defines no ModelNew (a solution is a Python file with class ModelNew)")
    return solution
