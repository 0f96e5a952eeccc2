"""Worker side of hardware-counter collection (mode "profile"; see counters.py for the parent side).

Only kernels that already passed the harness get here. The worker loads problem and candidate as an
evaluation does, warms the kernel up, then switches the counters on around `calls` runs of ModelNew and off
again: perf through its control fifo, ncu through cudaProfilerStart/Stop.
"""

from __future__ import annotations

import secrets
import time


def _perf_control(request: dict, command: str) -> None:
    if not request.get("perf_ctl"):
        return
    with open(request["perf_ctl"], "w") as ctl:
        ctl.write(command + "\n")
    with open(request["perf_ack"]) as ack:  # perf answers "ack" once counting has really switched
        ack.readline()


def profile_request(request: dict, phase) -> dict:
    import torch

    from agentkern.harness.loading import load_module, load_problem_module

    device = torch.device(request["device"])
    problem = load_problem_module(request["problem_path"], f"_reference_{secrets.token_hex(8)}", request.get("size"))
    phase.enter("compile")
    solution = load_module(request["solution_path"], "agentkern_candidate")
    torch.manual_seed(request["seed"])
    kernel = solution.ModelNew(*problem.get_init_inputs()).to(device).eval()
    torch.manual_seed(request["seed"] + 1)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    import contextlib

    from agentkern.harness.device_lock import timing_lock

    phase.enter("queued")  # counters are measurements too: one at a time per device
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    # A confined worker's parent holds the lock for it (confined_worker.py): its lock folder is not visible here.
    lock = contextlib.nullcontext() if request.get("timing_lock_held") else timing_lock(device)
    with lock, torch.no_grad():
        phase.enter("run")
        for _ in range(3):
            kernel(*inputs)
        sync()
        _perf_control(request, "enable")
        if device.type == "cuda":
            torch.cuda.profiler.start()
        start = time.perf_counter()
        for _ in range(request["calls"]):
            kernel(*inputs)
        sync()
        loop_ms = (time.perf_counter() - start) * 1e3
        if device.type == "cuda":
            torch.cuda.profiler.stop()
        _perf_control(request, "disable")
    return {"status": "ok", "correct": True, "calls": request["calls"], "loop_ms": loop_ms}
