"""The unit tier's rule, enforced on every test here: no sandboxed harness worker and no compiler, in this
process or in any Python process the test starts (no_sandbox/sitecustomize.py). It keeps the tier under a
minute as tests are added; a test that needs either belongs in tests/harness or tests/e2e (tests/README.md)."""

import contextlib
import importlib.util
import os
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

GUARD_DIR = Path(__file__).resolve().parent / "no_sandbox"
# Loaded by path under its own name: `import sitecustomize` could find another one.
_spec = importlib.util.spec_from_file_location("unit_no_sandbox", GUARD_DIR / "sitecustomize.py")
guard = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(guard)
_LOGS = tempfile.TemporaryDirectory(prefix="agentkern-unit-guard-")


@contextlib.contextmanager
def no_sandbox_no_compiler():
    """Fail on a harness worker or a compiler started inside: at once in this process (pytest.fail is a
    BaseException, so `except Exception` in the code under test does not hide it), and at the end for what
    child processes wrote to the log."""
    log = Path(_LOGS.name) / f"{uuid.uuid4().hex}.log"
    seen = []

    def report(why, args):
        seen.append(f"{why}: {args!r}")
        pytest.fail(f"this unit test {why} ({args!r}); move it to tests/harness or tests/e2e", pytrace=False)

    saved = _install(report, log)
    try:
        yield
    except BaseException as exc:
        _restore(saved)
        if not (seen and isinstance(exc, pytest.fail.Exception)):  # else it is report's failure, which says why
            _fail_if_any(seen, log)  # a child's refusal often shows only as an odd result
        raise
    _restore(saved)
    _fail_if_any(seen, log)


def _install(report, log: Path) -> tuple:
    saved = (subprocess.Popen.__init__, {var: os.environ.get(var) for var in (guard.LOG_VAR, "PYTHONPATH")})
    subprocess.Popen.__init__ = guard.guarded(subprocess.Popen.__init__, report)
    os.environ[guard.LOG_VAR] = str(log)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(GUARD_DIR), saved[1]["PYTHONPATH"]]))
    return saved


def _restore(saved: tuple) -> None:
    subprocess.Popen.__init__, env = saved
    for var, value in env.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value


def _fail_if_any(seen: list[str], log: Path) -> None:
    found = seen + (log.read_text().splitlines() if log.exists() else [])
    if found:
        message = "the unit tier starts no harness worker and no compiler; this test did:\n" + "\n".join(found)
        pytest.fail(message, pytrace=False)


# Each phase, so that fixtures of module or session scope, set up in the first test's setup, are guarded too.
@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    with no_sandbox_no_compiler():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with no_sandbox_no_compiler():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    with no_sandbox_no_compiler():
        return (yield)


@pytest.fixture(autouse=True)
def no_fma_loop(monkeypatch):
    """The host's FMA peak is measured by a compiled loop (agentkern/targets/fma_peak.py; run for real in
    tests/harness/test_host_figures.py): here it reports none, as on a host without a compiler, and the
    other estimates of the peak stand alone."""
    from agentkern.targets import fma_peak

    monkeypatch.setattr(fma_peak, "measure_tflops", lambda cores, trials=4: 0.0)
