import ctypes
import subprocess

import pytest

from agentkern import native

SRC = 'extern "C" int add(int a, int b) { return a + b; }\n'


def test_compile_and_call(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTKERN_CPP_CACHE", str(tmp_path))
    lib = native.compile_cpp(SRC, name="adder")
    lib.add.restype = ctypes.c_int
    assert lib.add(2, 3) == 5


def test_unchanged_source_never_rebuilds(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTKERN_CPP_CACHE", str(tmp_path))
    native.compile_cpp(SRC, name="adder")
    calls = []
    real_run = subprocess.run
    monkeypatch.setattr(native.subprocess, "run", lambda *a, **k: calls.append(a) or real_run(*a, **k))
    native.compile_cpp(SRC, name="adder")
    assert calls == []
    native.compile_cpp(SRC + "// changed\n", name="adder")
    assert any("g++" in str(c[0][0]) for c in calls)


def test_compile_error_carries_the_diagnostics(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTKERN_CPP_CACHE", str(tmp_path))
    with pytest.raises(native.CompileError, match="error"):
        native.compile_cpp('extern "C" int f() { return undefined_name; }', name="broken")
    assert not list(tmp_path.rglob("*.so"))  # a failed build leaves nothing to be loaded later
