"""agentkern/backends/: discovery, the one detector, defaults per target kind and the wrong-target messages."""

import importlib
import pkgutil
import sqlite3

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from loop_fakes import FakeEvaluate, ListPolicy

from agentkern import backends
from agentkern.config import dataset_dir
from agentkern.errors import UserError
from agentkern.harness.evaluate import evaluate
from agentkern.harness.static_checks import PATCHABLE_ROOTS
from agentkern.loop import run as optimize
from agentkern.loop.deps import OptimizeOptions
from agentkern.policies import prompts

TRITON = """import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass
"""
TRITON_FROM = "from triton import language as tl\n"
TRITON_JIT_ONLY = "import torch\n\n\n@triton.jit\ndef k(x):\n    pass\n"
CUDA = """import torch
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor relu(torch::Tensor x);"
module = load_inline("relu", cpp_sources=cpp_src, cuda_sources=CUDA_SRC, functions=["relu"])
"""
CUDA_GLOBAL = '__global__ void relu(const float* x, float* y, int n) {}\nsource = """extern "C" void f() {}"""\n'
CPP_COMPILE = 'from agentkern.native import compile_cpp\n\nSRC = r"""\nvoid relu() {}\n"""\nlib = compile_cpp(SRC)\n'
CPP_INLINE = "from torch.utils.cpp_extension import load_inline\nload_inline('m', cpp_sources=SRC, functions=['f'])\n"
CPP_CTYPES = 'import ctypes\nSRC = """\nextern "C" void relu(const float* x, float* y, long n) {}\n"""\n'
TORCH = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
# "triton" in a comment or a string is not an import.
TORCH_MENTIONS_TRITON = "import torch  # faster than a triton kernel here\nNOTE = 'no triton.jit needed'\n"


@pytest.mark.parametrize(
    "source, backend",
    [
        (TRITON, "triton"),
        (TRITON_FROM, "triton"),
        (TRITON_JIT_ONLY, "triton"),
        (CUDA, "cuda"),
        (CUDA_GLOBAL, "cuda"),
        (CPP_COMPILE, "cpp"),
        (CPP_INLINE, "cpp"),
        (CPP_CTYPES, "cpp"),
        (TORCH, "torch"),
        (TORCH_MENTIONS_TRITON, "torch"),
    ],
)
def test_detect_names_the_backend_a_solution_uses(source, backend):
    assert backends.detect(source) == backend


def test_the_dataset_solutions_are_detected_as_their_file_names_say():
    solutions = sorted((dataset_dir() / "solutions").glob("*.py"))
    assert solutions
    for path in solutions:
        assert backends.detect(path.read_text()) == path.stem.rpartition("_")[2], path.name


def test_detection_order_is_cuda_then_triton_then_cpp():
    names = backends.names()
    assert {"cuda", "triton", "cpp"} <= set(names)
    assert names.index("cuda") < names.index("triton") < names.index("cpp")
    assert [b.name for b in backends.all()] == list(names)


def test_default_backend_per_target_kind():
    assert backends.default_for("cpu") == "cpp"
    assert backends.default_for("gpu") == "triton"
    with pytest.raises(UserError, match="tpu"):
        backends.default_for("tpu")


def test_an_unknown_backend_is_a_user_error_naming_the_known_ones():
    with pytest.raises(UserError, match=rf"unknown backend 'opencl': choose one of {', '.join(backends.names())}$"):
        backends.get("opencl")
    with pytest.raises(UserError):
        backends.get(backends.NO_BACKEND)  # "torch" is what detect() says of no backend, not a backend


def test_every_module_in_the_package_is_a_backend_of_its_own_name():
    modules = [m.name for m in pkgutil.iter_modules(backends.__path__) if m.name != "base"]
    assert sorted(modules) == sorted(backends.names())
    for name in modules:
        backend = importlib.import_module(f"agentkern.backends.{name}").BACKEND
        assert backend.name == name and backends.get(name) is backend


def test_each_backend_is_complete_and_consistent():
    templates = prompts.template_names()
    for b in backends.all():
        assert b.prompt in templates, f"prompts/{b.prompt}.j2 missing for {b.name}"
        assert b.device_kind in ("cpu", "gpu") and b.display and b.markers and b.name in b.wrong_target
        assert b.without_hardware in ("none", "interpreter", "ptx")
        assert bool(b.interpreter_env) == (b.without_hardware == "interpreter")
        # A backend that cannot run on the other kind of target says why; only an interpreter runs it anyway.
        assert (b.wrong_target_solution is None) == (b.without_hardware == "interpreter")
        assert all(var.isupper() and kind and "/" not in kind for var, kind in b.cache_env.items())
    for kind in ("cpu", "gpu"):
        assert sum(b.default and b.device_kind == kind for b in backends.all()) == 1


def test_the_facts_each_backend_declares():
    cpp, triton, cuda = (backends.get(n) for n in ("cpp", "triton", "cuda"))
    assert cpp.cache_env == {"AGENTKERN_CPP_CACHE": "cpp", "TORCH_EXTENSIONS_DIR": "torch_extensions"}
    assert triton.cache_env == {"TRITON_CACHE_DIR": "triton"}
    assert cuda.cache_env == {"TORCH_EXTENSIONS_DIR": "torch_extensions"}
    assert (cpp.without_hardware, triton.without_hardware, cuda.without_hardware) == ("none", "interpreter", "ptx")
    assert triton.interpreter_env == {"TRITON_INTERPRET": "1"}
    assert "triton" in PATCHABLE_ROOTS  # a candidate may not patch the backend's own package
    assert triton.compile_failed("CompilationError", "") and triton.compile_failed("CompileTimeAssertionFailure", "")
    assert cuda.compile_failed("RuntimeError", "Error building extension 'relu'")
    assert cpp.compile_failed("CompileError", "g++ failed (exit 1)")
    assert not any(b.compile_failed("RuntimeError", "CUDA error: illegal memory access") for b in backends.all())


def _prepare(tmp_path, target: str, backend: str | None):
    opts = OptimizeOptions(problem="relu", target=target, backend=backend, beam=1, max_iters=1)
    saver = SqliteSaver(sqlite3.connect(tmp_path / "cp.db", check_same_thread=False))
    return optimize.run(opts, policy=ListPolicy(), evaluate=FakeEvaluate([1.0]), checkpointer=saver)


@pytest.mark.parametrize(
    "target, backend, message",
    [
        ("h100", "cpp", "the cpp backend writes CPU kernels: use --target cpu"),
        ("cpu", "triton", "the triton backend writes GPU kernels: choose a GPU target (e.g. --target h100)"),
        ("cpu", "cuda", "the cuda backend writes GPU kernels: choose a GPU target (e.g. --target h100)"),
        (
            "cpu",
            "opencl",
            f"--backend must be {', '.join(backends.names()[:-1])} or {backends.names()[-1]}, not 'opencl'",
        ),
    ],
)
def test_optimize_refuses_a_backend_for_the_other_kind_of_target(tmp_path, target, backend, message):
    with pytest.raises(UserError) as caught:
        _prepare(tmp_path, target, backend)
    assert str(caught.value) == message


def test_optimize_picks_the_default_backend_for_the_target(tmp_path):
    assert _prepare(tmp_path, "cpu", None)["backend"] == "cpp"


@pytest.mark.parametrize(
    "solution, target, message",
    [
        ("relu_cuda.py", "cpu", "this solution is a CUDA kernel: choose a GPU target (e.g. --target h100)"),
        ("relu_cpp.py", "h100", "C++ kernels run on the CPU: use --target cpu, not h100"),
    ],
)
def test_evaluate_refuses_a_solution_on_the_other_kind_of_target(solution, target, message):
    # Refused before any worker starts: no sandbox, no compiler.
    with pytest.raises(UserError) as caught:
        evaluate(dataset_dir() / "problems" / "relu.py", dataset_dir() / "solutions" / solution, target)
    assert str(caught.value) == message
