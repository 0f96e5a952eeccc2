"""What tests in every tier import: the repository's root, harness options for tests, a corpus file's header,
`agentkern` in a fresh process or in this one.

(Not in conftest.py: tests/unit has a conftest.py of its own, and pytest imports each as the module
`conftest`, so `from conftest import ...` would find whichever came last.)"""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def read_expectation(path: Path) -> tuple[str, str, str | None]:
    """(problem, status, reason code) from a corpus file's `# problem:` and `# expect:` lines."""
    text = path.read_text()
    problem = re.search(r"^# problem:\s*(\S+)", text, re.M)
    expect = re.search(r"^# expect:\s*(\S+)(?:\s+(\S+))?", text, re.M)
    assert problem and expect, f"{path} lacks its '# problem:' / '# expect:' header"
    return problem.group(1), expect.group(1), expect.group(2)


def fast_options(**overrides):
    """Harness options for tests: full correctness checking, a short timing phase."""
    from agentkern.types import EvalOptions

    # One measurement even on a busy host (harness/host_load.py): tests that count timed calls stay exact.
    opts = EvalOptions(
        time_budget_s=0.05,
        min_timed_calls=3,
        max_timed_calls=5,
        run_timeout_s=60,
        memory_limit_gb=4,
        busy_host_attempts=1,
    )
    for key, value in overrides.items():
        setattr(opts, key, value)
    return opts


def run_cli(*args, timeout=300) -> subprocess.CompletedProcess:
    """`agentkern ARGS` in a fresh process, from the repository's root."""
    return subprocess.run(
        [sys.executable, "-m", "agentkern", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ},
    )


def run_main(capsys, *args) -> tuple[int, str, str]:
    """`agentkern ARGS` in this process (faster than a subprocess): (exit code, stdout, stderr)."""
    from agentkern import cli

    saved = sys.argv
    sys.argv = ["agentkern", *args]
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code or 0
    finally:
        sys.argv = saved
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# An honest C++ ReLU for tests' candidates: a candidate computes with its own kernel (torch ops beyond allocating,
# viewing and copying are a fallback, rejected). Prepend it to a candidate's source, then call relu_kernel(x).
RELU_KERNEL = '''
import ctypes as _ctypes

import torch as _torch

from agentkern.native import compile_cpp as _compile_cpp, ptr as _ptr

_RELU = _compile_cpp(r"""
extern "C" void relu(const float* x, float* y, long n, float noise) {
    for (long i = 0; i < n; ++i) y[i] = (x[i] > 0.0f ? x[i] : 0.0f) + noise;
}
""")


def relu_kernel(x, noise=0.0):
    x = x.contiguous()
    y = _torch.empty_like(x)
    _RELU.relu(_ptr(x), _ptr(y), _ctypes.c_long(x.numel()), _ctypes.c_float(noise))
    return y
'''
