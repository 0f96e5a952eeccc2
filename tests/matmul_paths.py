"""What the template path tests share (tests/harness/test_matmul_amx.py, test_matmul_bf16_dot.py, ...,
test_attention_row_max.py): a problem file written from a forward body, the kernel the template renders for it,
and a check script run in a child process, as any candidate is (a path's tile state and threads stay out of
pytest's)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"

# The child's first lines: `problem` and `kernel` loaded from the paths in argv[1] and argv[2], and `reference`
# (problem.Model) and `candidate` (kernel.ModelNew) built from the same seed, so their parameters agree; the
# check's own arguments follow in argv[3:].
CHILD_PRELUDE = textwrap.dedent("""
    import importlib.util, sys
    import torch

    def load(path, name):
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    problem, kernel = load(sys.argv[1], "problem"), load(sys.argv[2], "kernel")
    torch.manual_seed(0)
    reference = problem.Model().eval()
    torch.manual_seed(0)
    candidate = kernel.ModelNew().eval()
""")


MICROS = {"6x16": 16, "12x32": 32}  # the template's micro-kernels at both vector widths -> a panel's columns (NR)

# A check for run_check: on fresh inputs the candidate's output has the reference's shape and matches it to the
# tolerance given as the check's first argument (absolute and relative).
MATCHES_TORCH = """
    with torch.no_grad():
        torch.manual_seed(1)
        xs = problem.get_inputs()
        got, expected = candidate(*xs), reference(*xs)
        assert got.shape == expected.shape, (got.shape, expected.shape)
        tol = float(sys.argv[3])
        torch.testing.assert_close(got, expected, atol=tol, rtol=tol)
    print("ok")
"""


def avx512_micro_kernels_run_here() -> bool:
    """Whether this host (at the level AGENTKERN_CPU_ISA holds it to) runs the template's AVX-512 micro-kernels."""
    from agentkern.policies.builtin import templates
    from agentkern.targets import get_target

    return templates.host_features(get_target("cpu").simd_width_bits) == templates.host_features(512)


def write_problem(folder: Path, name: str, forward: str, inputs: str, init: str = "", args: str = "") -> Path:
    """A KernelBench-format problem: `forward` takes `args`, by default (x) when it uses self.fc, else (a, b)."""
    args = args or ("x" if "self.fc" in forward else "a, b")
    body = f"""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                {init or "pass"}

            def forward(self, {args}):
                {forward}

        def get_inputs():
            return [{inputs}]

        def get_init_inputs():
            return []
        """
    path = folder / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def render_kernel(problem_path: Path, params: dict, families: tuple[str, ...]) -> Path:
    """The built-in template's kernel for the problem with `params`, beside it; the problem must be recognised
    as one of `families`."""
    from agentkern.policies.builtin import templates
    from agentkern.policies.builtin.recognize import analyze

    spec = analyze(str(problem_path))
    assert spec["family"] in families, spec.get("reason")
    kernel_path = problem_path.with_name(f"{problem_path.stem}_kernel.py")
    kernel_path.write_text(templates.render(spec, params))
    return kernel_path


def run_check(check: str, problem_path: Path, kernel_path: Path, *args: str) -> None:
    """Run CHILD_PRELUDE + `check` in a child process; it must exit 0 and print only "ok"."""
    script = problem_path.with_name("check.py")
    script.write_text(CHILD_PRELUDE + textwrap.dedent(check))
    run = subprocess.run(
        [sys.executable, str(script), str(problem_path), str(kernel_path), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]
