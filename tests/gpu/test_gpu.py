"""GPU paths: real Triton and CUDA timing, the L2 flush, the side-stream check. Skipped without CUDA."""

import pytest
from support import ROOT, fast_options, read_expectation

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

SOLUTIONS = ROOT / "kernels_dataset" / "solutions"


def gpu_options(**overrides):
    # The gpu sizes' inputs (8192 x 8192 fp32: 256 MiB each) and three processes with CUDA contexts need more
    # host memory than fast_options' 4 GiB (seen on an H200: the watchdog stopped an honest kernel).
    return fast_options(**{"memory_limit_gb": 32, "compile_timeout_s": 600, **overrides})


def _gpu_target():
    from agentkern.targets import get_target

    target = get_target("auto")
    if target.kind != "gpu":
        pytest.skip("the local GPU is not in the target catalog")
    return target.name


def test_triton_kernel_is_timed_with_cuda_events():
    from agentkern.harness import confine
    from agentkern.harness.evaluate import evaluate

    result = evaluate("softmax", SOLUTIONS / "softmax_triton.py", _gpu_target(), gpu_options())
    assert result.status == "ok", result.error
    assert result.details["device"] == "cuda"
    assert result.details["isolation"] == confine.isolation()  # under bubblewrap where it works: the GPU is bound in
    assert result.kernel_ms > 0 and result.speedup > 0 and result.roofline_fraction > 0


def test_cuda_kernel_builds_runs_and_is_timed():
    from agentkern.harness.evaluate import evaluate

    result = evaluate("relu", SOLUTIONS / "relu_cuda.py", _gpu_target(), gpu_options())
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
    result = evaluate(problem, path, _gpu_target(), gpu_options())
    assert result.status == "rejected" and result.details["rejected_because"] == code, result.error


def test_a_confined_process_maps_the_judges_device_memory(tmp_path):
    """cuda_ipc: a buffer the judge allocates is read and written in place by a runner in its sandbox."""
    import subprocess
    import sys

    from agentkern.harness import confine
    from agentkern.harness.cuda_ipc import DeviceBuffer

    device = torch.device("cuda")
    buffer = DeviceBuffer(1 << 20, device)
    buffer.tensor.view(torch.float32).copy_(torch.arange(1 << 18, dtype=torch.float32, device=device))
    torch.cuda.synchronize()
    child = (
        "import json, sys, torch\n"
        "from agentkern.harness.cuda_ipc import OpenedBuffers\n"
        "t = OpenedBuffers().get('inputs', json.loads(sys.argv[1]), torch.device('cuda')).view(torch.float32)\n"
        "print(float(t[:4].sum())); t.mul_(2); torch.cuda.synchronize()\n"
    )
    import json

    argv = confine.command([sys.executable, "-c", child, json.dumps(buffer.spec)], tmp_path)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "6.0"
    assert float(buffer.tensor.view(torch.float32)[5]) == 10.0
    buffer.close()
