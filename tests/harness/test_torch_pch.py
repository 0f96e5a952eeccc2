"""The judge's precompiled torch headers (harness/torch_pch.py) and the builds that include them (native.py)."""

import subprocess
from pathlib import Path

import pytest
import torch
from test_native import OP_SRC

from agentkern import native
from agentkern.harness import torch_pch

pytestmark = pytest.mark.skipif(native.torch_build_flags() is None, reason="this torch ships no C++ headers")

# Compiles only where the torch headers were not included before it: a kernel the header upsets.
CLASHING_SRC = '#ifdef TORCH_CHECK\n#error "torch\'s headers came before this line"\n#endif\n' + OP_SRC


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTKERN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENTKERN_CPP_CACHE", str(tmp_path / "cpp"))
    monkeypatch.delenv(torch_pch.OFF_ENV, raising=False)
    monkeypatch.delenv("AGENTKERN_NO_TORCH_OPS", raising=False)
    monkeypatch.delenv(native.TORCH_PCH_ENV, raising=False)
    return tmp_path


def _builds(monkeypatch) -> list[list[str]]:
    """The compiler command lines run from now on (a list that fills as native builds)."""
    commands: list[list[str]] = []
    real_run = subprocess.run
    monkeypatch.setattr(native.subprocess, "run", lambda cmd, *a, **k: commands.append(cmd) or real_run(cmd, *a, **k))
    return commands


def test_built_once_then_included_first_by_a_build_against_torch(fresh_home, monkeypatch):
    assert torch_pch.ensure() == "built"
    assert torch_pch.ensure() == "ready"
    (root,) = torch_pch.readable()
    assert torch_pch.runner_env() == {native.TORCH_PCH_ENV: str(root)}
    monkeypatch.setenv(native.TORCH_PCH_ENV, str(root))
    commands = _builds(monkeypatch)
    _, ops = native.compile_with_ops(OP_SRC, name="twice_pch")
    x = torch.arange(6, dtype=torch.float32)
    assert torch.equal(ops.twice(x), 2 * x)
    (build,) = [c for c in commands if "-o" in c]
    header = Path(build[build.index("-include") + 1])
    assert header.parent.parent == root and header.with_name("ak_torch.h.gch").is_file()

    # A kernel the header upsets is built again as written, and works; the error is not the user's to see.
    commands.clear()
    _, clashing = native.compile_with_ops(CLASHING_SRC, name="twice_clash")
    assert torch.equal(clashing.twice(x), 2 * x)
    builds = [c for c in commands if "-o" in c]
    assert len(builds) == 2 and "-include" in builds[0] and "-include" not in builds[1]

    # Other flags than the header was built for: no header (g++ would reject it, or worse, accept it).
    commands.clear()
    native.compile_with_ops(OP_SRC, name="twice_o1", extra_flags=("-O1",))
    assert not any("-include" in c for c in commands)


def test_without_a_built_header_a_build_reads_torch_as_before(fresh_home, monkeypatch):
    monkeypatch.setenv(native.TORCH_PCH_ENV, str(fresh_home / "empty"))
    commands = _builds(monkeypatch)
    _, ops = native.compile_with_ops(OP_SRC.replace("2 * x[i]", "4 * x[i]"), name="twice_plain_pch")
    assert torch.equal(ops.twice(torch.ones(3)), torch.full((3,), 4.0))
    assert commands and not any("-include" in c for c in commands)


def test_a_failed_build_is_said_once_and_not_tried_at_every_evaluation(fresh_home, monkeypatch):
    monkeypatch.setenv("CXX", "false")  # a compiler that fails at everything
    first = torch_pch.ensure()
    assert first.startswith("failed")
    commands = _builds(monkeypatch)  # subprocess.run is one function: torch_pch's builds are seen too
    assert torch_pch.ensure() == first and not [c for c in commands if "c++-header" in c]


def test_off_when_asked(fresh_home, monkeypatch):
    monkeypatch.setenv(torch_pch.OFF_ENV, "1")
    assert torch_pch.ensure() == "off" and torch_pch.readable() == [] and torch_pch.runner_env() == {}


def test_busy_while_another_evaluation_builds_it(fresh_home):
    import fcntl

    root = torch_pch.folder()
    with open(root / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert torch_pch.ensure() == "busy"
