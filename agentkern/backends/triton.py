"""Triton kernels (@triton.jit) in the solution file. Without a GPU they run in Triton's interpreter on the
CPU (TRITON_INTERPRET=1): correctness is checked, timing is not measured."""

from agentkern.backends.base import Backend

BACKEND = Backend(
    name="triton",
    device_kind="gpu",
    display="Triton",
    prompt="coder_triton",
    priority=20,
    markers=(r"^\s*(import triton|from triton)", r"@triton\.jit"),
    python_modules=("triton",),
    default=True,
    cache_env={"TRITON_CACHE_DIR": "triton"},
    without_hardware="interpreter",
    # Read when triton is imported, so before the candidate's @triton.jit runs: set in the worker's environment.
    interpreter_env={"TRITON_INTERPRET": "1"},
    compile_error_types=("CompilationError", "CompileTimeAssertionFailure"),
    wrong_target="the triton backend writes GPU kernels: choose a GPU target (e.g. --target h100)",
    wrong_target_solution=None,  # on a CPU target it runs in the interpreter
)
