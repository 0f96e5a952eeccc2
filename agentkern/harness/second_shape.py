"""A second shape: the trials again with the problem's size constants changed, so a kernel that hard-codes
the shape it was written for (or only works for multiples of its tile) fails.

A KernelBench problem keeps its sizes in module constants (`N = 1024`, `BATCH = 16`) read by get_inputs()
and get_init_inputs(). Each such constant (an int >= 2 that either function reads) becomes
v // 2 + 1 (1024 -> 513: smaller, so cheap, and off every power of two). Both runners load their model
again at that shape (the candidate's file is run again as it is: a constant it copied stays as it was),
two trials run, and the models are loaded back at the first shape for timing. Where the reference itself
refuses the second shape (a size that must divide another), it is skipped and details.second_shape says
why; a problem whose sizes are not module constants has none.
"""

from __future__ import annotations

import secrets
import types

SECOND_SHAPE_TRIALS = 2


def read_by_inputs(problem: types.ModuleType) -> set[str]:
    """The global names get_inputs and get_init_inputs read."""
    read: set[str] = set()
    for name in ("get_inputs", "get_init_inputs"):
        code = getattr(getattr(problem, name, None), "__code__", None)
        if code is not None:
            read |= set(code.co_names)
    return read


def size_constants(problem: types.ModuleType) -> dict[str, int]:
    """The problem's size constants: module ints >= 2 (KernelBench's `batch_size`, `dim`; `N`) read by get_inputs
    or get_init_inputs."""
    read = read_by_inputs(problem)
    return {
        name: value
        for name, value in vars(problem).items()
        if name in read and not name.startswith("_") and type(value) is int and value >= 2
    }


def second_values(constants: dict[str, int]) -> dict[str, int]:
    return {name: value // 2 + 1 for name, value in constants.items()}


def set_constants(problem: types.ModuleType, values: dict[str, int]) -> None:
    """Set the size constants, then run again the module's top-level assignments computed from them
    (KernelBench's `bias_shape = (out_channels, 1, 1)`), so that the problem stays consistent."""
    for name, value in values.items():
        setattr(problem, name, value)
    if not values:
        return
    for statement in _derived(problem, frozenset(values)):
        exec(statement, vars(problem))  # the problem's own code (trusted: it defines the reference)


def _derived(problem: types.ModuleType, names: frozenset) -> list:
    import ast
    import inspect

    from agentkern.helpers import parse_python

    try:
        tree = parse_python(inspect.getsource(problem))
    except (OSError, TypeError, SyntaxError):
        return []
    return [
        compile(ast.Module(body=[node], type_ignores=[]), problem.__name__, "exec")
        for node in derived_statements(tree.body, names)
    ]


def derived_statements(body: list, names: frozenset) -> list:
    """The top-level assignments in `body` computed from `names` that assign none of them, in order."""
    import ast

    found = []
    for node in body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        assigned = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        read = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        if read & names and not assigned & names:
            found.append(node)
    return found


def check_second_shape(session) -> dict | None:
    """The second shape's trials for an EvalSession whose first-shape trials passed: an incorrect verdict
    (or a raised rejection / candidate failure), or None; the models are back at the first shape after."""
    from agentkern.harness.sides import CandidateFailed, ReferenceFailed
    from agentkern.harness.trials import TrialInputs

    policy = session.opts.get("second_shape", "report")
    first = size_constants(session.problem)
    if policy == "off":
        session.details["second_shape"] = {"skipped": "off (EvalOptions.second_shape)"}
        return None
    if not first:
        session.details["second_shape"] = {"skipped": "the problem has no size constants"}
        return None
    values = second_values(first)
    shape = ", ".join(f"{k}={v}" for k, v in sorted(values.items()))
    set_constants(session.problem, values)
    try:
        session.load_models(constants=values)
        seeds = [secrets.randbelow(2**31) for _ in range(SECOND_SHAPE_TRIALS)]
        verdict, _ = session.run_trials(TrialInputs(session.problem, seeds), record_details=False)
    except ReferenceFailed as exc:
        session.details["second_shape"] = {"skipped": f"the reference refuses {shape}: {str(exc)[:200]}"}
        verdict = None
    except CandidateFailed as failed:
        if policy == "require" or not session.sides["candidate"].alive():  # a crash there ends it: no runner left
            failed.error = f"at a second shape ({shape}): {failed.error}"
            raise
        verdict = {"status": failed.status, "error": failed.error}
    finally:
        set_constants(session.problem, first)
    if verdict is not None:
        verdict["error"] = f"at a second shape ({shape}): {verdict['error']}"
        if policy == "require":
            session.details["failed_trial"]["shape"] = values
            return verdict
        # Shape-specialised (the built-in templates are, as tuned kernels often are): said, not failed.
        session.details.pop("failed_trial", None)
        session.details["second_shape"] = {"constants": values, "failed": verdict["error"]}
    session.details.setdefault("second_shape", {"constants": values, "trials": SECOND_SHAPE_TRIALS})
    session.load_models()  # back to the first shape, for timing
    return None
