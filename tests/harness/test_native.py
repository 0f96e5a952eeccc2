import ctypes
import os
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


OP_SRC = r"""
#include <cstdint>
extern "C" int twice(const float* x, float* y, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = 2 * x[i]; return 0; }
#ifdef AK_NS
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>
#define AK_LIBRARY(ns, m) TORCH_LIBRARY(ns, m)
#define AK_LIBRARY_IMPL(ns, k, m) TORCH_LIBRARY_IMPL(ns, k, m)
static at::Tensor ak_launch(const at::Tensor& x_in) {
    TORCH_CHECK_TYPE(x_in.scalar_type() == at::kFloat, "float32 only, got ", x_in.scalar_type());
    const at::Tensor x = x_in.contiguous();
    at::Tensor y = at::empty(x.sizes(), x.options());
    twice(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
AK_LIBRARY(AK_NS, m) { m.def("twice(Tensor x) -> Tensor"); }
AK_LIBRARY_IMPL(AK_NS, CPU, m) { m.impl("twice", ak_launch); }
#endif
"""


@pytest.mark.skipif(native.torch_build_flags() is None, reason="this torch ships no C++ headers")
def test_a_source_with_a_torch_op_is_built_against_torch_and_registers_it(tmp_path, monkeypatch):
    import torch

    monkeypatch.setenv("AGENTKERN_CPP_CACHE", str(tmp_path))
    lib, ops = native.compile_with_ops(OP_SRC, name="twice")
    assert ops is not None
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()  # not contiguous: the op copies it first
    assert torch.equal(ops.twice(x), 2 * x)
    with pytest.raises(TypeError, match="float32 only"):
        ops.twice(x.double())
    assert lib.twice is not None  # the ctypes entry point is in the same library
    # One namespace per source: a changed kernel (another candidate) registers beside it, not over it.
    other = OP_SRC.replace("2 * x[i]", "3 * x[i]")
    assert native.op_namespace(other) != native.op_namespace(OP_SRC)
    _, other_ops = native.compile_with_ops(other, name="twice")
    assert torch.equal(other_ops.twice(x), 3 * x) and torch.equal(ops.twice(x), 2 * x)
    # The same source built in another folder is another library: another namespace (a second registration
    # of one namespace would abort this process), and loading the first again registers nothing twice.
    monkeypatch.setenv("AGENTKERN_CPP_CACHE", str(tmp_path / "elsewhere"))
    _, moved_ops = native.compile_with_ops(OP_SRC, name="twice")
    assert torch.equal(moved_ops.twice(x), 2 * x) and native.op_namespace(OP_SRC) != ops.name
    monkeypatch.setenv("AGENTKERN_CPP_CACHE", str(tmp_path))
    _, again = native.compile_with_ops(OP_SRC, name="twice")
    assert again.name == ops.name and torch.equal(again.twice(x), 2 * x)


def test_a_fresh_process_names_a_source_the_same_in_any_build_folder(tmp_path):
    """Each evaluation's runner builds in a scratch folder of its own (without bubblewrap, a different path each
    time): the namespace, part of the library's cache key, must not change with it, or every evaluation of an
    unchanged kernel rebuilds it."""
    import sys

    names = set()
    for folder in ("a", "b"):
        env = {**os.environ, "AGENTKERN_CPP_CACHE": str(tmp_path / folder)}
        code = "from agentkern import native; print(native.op_namespace('int f();'))"
        names.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout)
    assert len(names) == 1 and next(iter(names)).startswith("ak_")


def test_without_torch_ops_the_plain_library_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTKERN_CPP_CACHE", str(tmp_path))
    monkeypatch.setenv("AGENTKERN_NO_TORCH_OPS", "1")
    lib, ops = native.compile_with_ops(OP_SRC, name="twice_plain")
    assert ops is None
    x = (ctypes.c_float * 3)(1, 2, 3)
    y = (ctypes.c_float * 3)()
    assert lib.twice(x, y, ctypes.c_int64(3)) == 0 and list(y) == [2, 4, 6]


ISA_SRC = r"""
extern "C" int widest() {
#if defined(__AMX_TILE__) || defined(__AVX512BF16__)
    return 1024;
#elif defined(__AVX512F__)
    return 512;
#elif defined(__AVX2__) && defined(__FMA__)
    return 256;
#else
    return 128;
#endif
}
"""


@pytest.mark.parametrize("level, widest", [("avx2", 256), ("avx512", 512)])
def test_a_capped_build_uses_no_instruction_above_its_level(tmp_path, monkeypatch, level, widest):
    from agentkern import cpu_isa

    if not cpu_isa.LEVELS[level].needs <= cpu_isa.cpu_flags():
        pytest.skip(f"this CPU cannot run {level}")
    monkeypatch.setenv("AGENTKERN_CPP_CACHE", str(tmp_path))
    native_widest = native.compile_cpp(ISA_SRC, name="isa").widest()
    monkeypatch.setenv(cpu_isa.ENV, level)
    assert native.compile_cpp(ISA_SRC, name="isa").widest() == widest
    assert native_widest >= widest
    # Keyed on the flags: the capped build is a library of its own even where its widest vector is the host's
    # (an AVX-512 Ice Lake without BF16 capped to x86-64-v4).
    assert len(list(tmp_path.rglob("*.so"))) == 2
