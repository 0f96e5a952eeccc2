"""Benchmark: what a judged GPU block costs besides the kernel, piece by piece, in one process.

    python benchmarks/gpu_block_costs.py PROBLEM.py KERNEL.py [--idle-s 0.5] [--repeats 7]

For the problem's reference and the kernel (trusted code only, at the problem's gpu size), each as one
block of the harness would run it: the GPU left idle for `--idle-s` (the judge draws the next inputs on the
CPU meanwhile), optionally warmed (agentkern/harness/gpu_clocks.py: a spin kernel, or matrix products, for
W ms), then one call, its outputs copied into a region and synchronised (the runner's part), then a checksum
of the region (the judge's fence). Beside it, the kernel alone (triton.testing.do_bench, L2 flushed, back to
back). The SM clock is read through NVML where nvidia-ml-py is installed. It prints figures; it asserts
nothing. Needs a CUDA device.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
from _common import load_module


def _sm_clock_mhz():
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        return pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
    except Exception:  # no NVML here: the clock is not reported
        return None


def block_ms(model, inputs, region, idle_s: float, warm: tuple[str, float], repeats: int) -> dict:
    from agentkern.harness import gpu_clocks

    device = region.device
    call, fence, clocks = [], [], []
    with torch.no_grad():
        for _ in range(repeats):
            time.sleep(idle_s)
            gpu_clocks.warm(device, warm[1], warm[0])
            clocks.append(_sm_clock_mhz())
            t0 = time.perf_counter()
            outs = model(*inputs)
            outs = outs if isinstance(outs, (list, tuple)) else [outs]
            offset = 0
            for t in outs:
                raw = t.contiguous().view(-1).view(torch.uint8)
                region[offset : offset + raw.numel()].copy_(raw)
                offset += raw.numel()
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            int(region.view(torch.int64).sum())
            t2 = time.perf_counter()
            call.append((t1 - t0) * 1e3)
            fence.append((t2 - t1) * 1e3)
    return {"call_and_copy_ms": statistics.median(call), "fence_ms": statistics.median(fence), "sm_mhz": clocks}


def copy_ms(region) -> float:
    import triton.testing

    half = region.numel() // 2
    return triton.testing.do_bench(lambda: region[half : 2 * half].copy_(region[:half]), warmup=20, rep=100) * 2


def main() -> None:
    import triton.testing

    from agentkern.harness.loading import load_problem_module

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", type=Path)
    parser.add_argument("kernel", type=Path)
    parser.add_argument("--idle-s", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    problem = load_problem_module(str(args.problem), "costs_problem", "gpu")
    kernel_module = load_module(args.kernel, "costs_kernel")
    init = problem.get_init_inputs()
    torch.manual_seed(1)
    models = {"reference": problem.Model(*init).cuda().eval()}
    torch.manual_seed(1)
    models["kernel"] = kernel_module.ModelNew(*init).cuda().eval()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    with torch.no_grad():
        out = models["reference"](*inputs)
    outs = out if isinstance(out, (list, tuple)) else [out]
    nbytes = sum(t.numel() * t.element_size() for t in outs)
    region = torch.empty((nbytes + 7) // 8 * 8, dtype=torch.uint8, device="cuda")
    print(
        json.dumps(
            {"device": torch.cuda.get_device_name(), "output_mib": nbytes / 2**20, "idle_sm_mhz": _sm_clock_mhz()}
        )
    )
    print(json.dumps({"region_copy_ms": copy_ms(region)}))
    warms = [("spin", 0.0), ("spin", 2.0), ("spin", 10.0), ("spin", 30.0), ("work", 10.0)]
    for name, model in models.items():
        with torch.no_grad():
            alone = triton.testing.do_bench(lambda m=model: m(*inputs), warmup=50, rep=300)
        row = {"side": name, "alone_ms": alone}
        for how, ms in warms:
            row[f"{how}_{ms:g}ms"] = block_ms(model, inputs, region, args.idle_s, (how, ms), args.repeats)
        print(json.dumps(row))


if __name__ == "__main__":
    main()
