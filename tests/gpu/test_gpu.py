"""GPU paths: real Triton and CUDA timing, the L2 flush, the side-stream check. Skipped without CUDA."""

import pytest
from support import ROOT, fast_options, read_expectation

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

SOLUTIONS = ROOT / "kernels_dataset" / "solutions"


def _gpu_target():
    from agentkern.targets import get_target

    target = get_target("auto")
    if target.kind != "gpu":
        pytest.skip("the local GPU is not in the target catalog")
    return target.name


def test_triton_kernel_is_timed_with_cuda_events():
    from agentkern.harness.evaluate import evaluate

    result = evaluate("softmax", SOLUTIONS / "softmax_triton.py", _gpu_target(), fast_options())
    assert result.status == "ok", result.error
    assert result.details["device"] == "cuda"
    assert result.kernel_ms > 0 and result.speedup > 0 and result.roofline_fraction > 0


def test_cuda_kernel_builds_runs_and_is_timed():
    from agentkern.harness.evaluate import evaluate

    result = evaluate("relu", SOLUTIONS / "relu_cuda.py", _gpu_target(), fast_options(compile_timeout_s=600))
    assert result.status == "ok", result.error
    assert result.details["backend"] == "cuda" and result.kernel_ms > 0


def test_l2_flush_buffer_is_larger_than_the_l2():
    from agentkern.harness.jobs import flush_bytes
    from agentkern.harness.timing import CacheFlusher
    from agentkern.targets import get_target

    target = get_target(_gpu_target())
    nbytes = flush_bytes(target, "cuda")
    assert nbytes >= 2 * target.l2_mb * 2**20
    flusher = CacheFlusher(torch.device("cuda"), nbytes)
    flusher.flush()
    torch.cuda.synchronize()
    assert flusher.buffer.numel() * 4 == nbytes and int(flusher.buffer.abs().sum()) == 0


@pytest.mark.parametrize(
    "path", sorted((ROOT / "tests" / "harness" / "cheats").glob("*side_stream*.py")), ids=lambda p: p.stem
)
def test_side_stream_cheats_are_rejected_on_a_gpu(path):
    from agentkern.harness.evaluate import evaluate

    problem, _, code = read_expectation(path)
    result = evaluate(problem, path, _gpu_target(), fast_options())
    assert result.status == "rejected" and result.details["rejected_because"] == code, result.error
