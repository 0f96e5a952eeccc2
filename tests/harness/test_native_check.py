"""The judge's native-library check (agentkern/harness/native_check.py) on libraries really built with g++:
one calling BLAS or ATen's compute is refused, an honest kernel is not."""

import shutil
import subprocess

import pytest

from agentkern.harness.native_check import check_libraries
from agentkern.harness.rejections import Rejected

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("nm") is None, reason="needs g++ and nm")

HONEST = 'extern "C" void relu(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0; }'
BLAS = """
extern "C" void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
extern "C" void mm(const float* a, const float* b, float* c, int n) { cblas_sgemm(101, 111, 111, n, n, n, 1, a, n, b, n, 0, c, n); }
"""
ATEN = """
namespace at { class Tensor; namespace _ops { struct mm { static Tensor call(const Tensor&, const Tensor&); }; } }
extern "C" void* mm_ptr() { return (void*)&at::_ops::mm::call; }
"""


def build(tmp_path, name, source):
    src = tmp_path / f"{name}.cpp"
    src.write_text(source)
    lib = tmp_path / f"lib{name}.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return str(lib)


def test_a_torch_op_launcher_that_only_allocates_passes_and_one_that_calls_mm_is_refused(tmp_path):
    """The C++ launchers of the built-in templates (torch custom ops, agentkern/native.py) allocate with ATen;
    a candidate's op could compute with it instead, hidden from the dispatch mode inside its own kernel."""
    from agentkern import native

    flags = native.torch_build_flags()
    if flags is None:
        pytest.skip("this torch ships no C++ headers")
    head = "#define TORCH_ASSERT_ONLY_METHOD_OPERATORS\n#include <ATen/core/Tensor.h>\n"
    honest = (
        head
        + "#include <ATen/ops/empty.h>\nat::Tensor f(const at::Tensor& x) { return at::empty(x.sizes(), x.options()); }\n"
    )
    cheat = head + "#include <ATen/ops/mm.h>\nat::Tensor f(const at::Tensor& a) { return at::mm(a, a); }\n"
    libs = {}
    for name, source in (("honest_op", honest), ("cheat_op", cheat)):
        src = tmp_path / f"{name}.cpp"
        src.write_text(source)
        libs[name] = str(tmp_path / f"lib{name}.so")
        cmd = ["g++", "-std=c++17", "-shared", "-fPIC", *flags[0], str(src), *flags[1], "-o", libs[name]]
        subprocess.run(cmd, check=True, capture_output=True)
    check_libraries({libs["honest_op"]})
    with pytest.raises(Rejected, match="ATen's mm op"):
        check_libraries({libs["cheat_op"]})


def test_an_honest_kernel_passes(tmp_path):
    check_libraries({build(tmp_path, "honest", HONEST)})


@pytest.mark.parametrize(("source", "why"), [(BLAS, "cblas_sgemm (BLAS)"), (ATEN, "ATen's mm op")])
def test_a_kernel_calling_a_compute_library_is_refused(tmp_path, source, why):
    with pytest.raises(Rejected) as caught:
        check_libraries({build(tmp_path, "cheat", source)})
    assert caught.value.code == "native_fallback" and why in caught.value.message


def test_a_compute_library_is_refused_by_name(tmp_path):
    lib = tmp_path / "libopenblas.so.0"
    lib.write_bytes(b"")
    with pytest.raises(Rejected, match="compute library libopenblas"):
        check_libraries({str(lib)})
