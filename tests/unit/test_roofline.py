"""The roofline check on a verdict: a speedup beyond what the target's bandwidth allows is flagged, and the
flops of attention count on the CPU too (torch's flop registry knows only the GPU kernels)."""

from agentkern.harness.evaluate import _add_roofline
from agentkern.targets import get_target
from agentkern.types import EvalResult


def test_a_speedup_beyond_the_roofline_is_flagged_not_celebrated():
    target = get_target("h100")
    # 1 GB moved on an H100 (3.35 TB/s) cannot take less than ~0.3 ms.
    work = {"flops": 0.0, "bytes": 1e9, "dtype": "float32"}
    fast = EvalResult("ok", True, speedup=50.0, reference_ms=5.0, kernel_ms=0.1, details={"work": work})
    _add_roofline(fast, target, "cuda")
    assert fast.roofline_fraction > 1 and "beats the h100 roofline" in fast.details["suspicious"]
    assert fast.details["bound"] == "memory"
    honest = EvalResult("ok", True, speedup=1.0, reference_ms=1.0, kernel_ms=1.0, details={"work": work})
    _add_roofline(honest, target, "cuda")
    assert 0 < honest.roofline_fraction < 1 and "suspicious" not in honest.details


def test_attention_flops_are_counted_on_cpu():
    """torch's flop registry knows the GPU attention kernels only; the CPU one must count too (roofline)."""
    import torch
    import torch.nn.functional as F

    from agentkern.harness.fallback import OpRecorder

    q, k, v = torch.randn(2, 3, 16, 8), torch.randn(2, 3, 24, 8), torch.randn(2, 3, 24, 8)
    with torch.no_grad(), OpRecorder() as recorder:
        F.scaled_dot_product_attention(q, k, v)
    assert recorder.flops == 2 * (2 * 2 * 3 * 16 * 24 * 8)  # q @ k^T and p @ v
    with torch.no_grad(), OpRecorder() as recorder:
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
    seen = sum(min(i + 1, 24) for i in range(16))  # query i sees keys 0..i
    assert recorder.flops == 2 * (2 * 2 * 3 * seen * 8)
