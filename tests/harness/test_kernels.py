"""The kernels shipped in kernels_dataset/solutions pass the harness on this machine's CPU."""

import shutil

import pytest
from support import ROOT, fast_options

SOLUTIONS = ROOT / "kernels_dataset" / "solutions"
CPP = sorted(SOLUTIONS.glob("*_cpp.py"))


@pytest.mark.parametrize("path", CPP, ids=lambda p: p.stem)
def test_cpp_kernel_is_correct_and_timed(path):
    from agentkern.harness.evaluate import evaluate

    problem = path.stem.removesuffix("_cpp")
    result = evaluate(problem, path, "cpu", fast_options())
    assert result.status == "ok", result.error
    assert result.correct and result.details["backend"] == "cpp"
    # Timing is measured (a number), not faked; how fast is the benchmark's business, not a test's.
    assert result.kernel_ms > 0 and result.reference_ms > 0 and result.speedup > 0
    assert result.roofline_fraction is not None and result.roofline_fraction > 0


def test_triton_kernel_is_checked_by_the_interpreter_without_timing():
    from agentkern.harness.evaluate import evaluate

    result = evaluate("softmax", SOLUTIONS / "softmax_triton.py", "cpu", fast_options(trials=2))
    assert result.status == "ok", result.error
    assert result.details["backend"] == "triton"
    assert result.kernel_ms is None and result.speedup is None
    assert "interpreter" in result.details["timing"]["unavailable"]


def test_triton_kernel_for_an_absent_gpu_says_timing_is_not_measured():
    from agentkern.harness.evaluate import evaluate
    from agentkern.targets import get_target, is_present

    if is_present(get_target("h100")):
        pytest.skip("an H100 is present: the GPU tests cover this")
    result = evaluate("softmax", SOLUTIONS / "softmax_triton.py", "h100", fast_options(trials=2))
    assert result.status == "ok", result.error
    assert result.speedup is None and "not measured" in result.details["timing"]["unavailable"]


def test_cuda_kernel_without_a_gpu_is_compile_checked_not_run():
    from agentkern.harness.evaluate import evaluate
    from agentkern.targets import get_target, is_present

    if is_present(get_target("h100")):
        pytest.skip("an H100 is present: the GPU tests cover this")
    result = evaluate("relu", SOLUTIONS / "relu_cuda.py", "h100", fast_options())
    assert result.status == "unverified", result.error
    assert result.correct is False and result.speedup is None
    if shutil.which("nvcc") and "header" not in result.error:
        assert "compiled for sm_90a" in result.error
        kernels = result.details["compiled"]["kernels"]  # read from the cubin: every kernel, its registers
        assert any("relu_f32x4_kernel" in k["kernel"] for k in kernels)
        assert all(0 < k["registers"] <= 255 and k["shared_bytes"] == 0 for k in kernels)
    elif not shutil.which("nvcc"):
        assert "no nvcc" in result.error


def test_cuda_kernel_that_does_not_compile_is_a_compile_error_even_without_a_gpu(tmp_path):
    from agentkern.harness.evaluate import evaluate
    from agentkern.targets import get_target, is_present

    if is_present(get_target("h100")) or not shutil.which("nvcc"):
        pytest.skip("needs nvcc and no H100 (with one, the GPU tests run the real build)")
    broken = (SOLUTIONS / "relu_cuda.py").read_text().replace("__global__", "__global__ not_a_type", 1)
    path = tmp_path / "relu_cuda_broken.py"
    path.write_text(broken)
    result = evaluate("relu", path, "h100", fast_options())
    assert result.status == "compile_error", result.error
    assert "error" in result.error and "nvcc_log" in result.details
