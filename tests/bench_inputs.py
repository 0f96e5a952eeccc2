"""Hand-made inputs for the bench tests: result rows and reports as `agentkern bench` writes them, and a
problem that declares SIZES (KernelBench's layout plus agentkern's per-target sizes)."""


def row(
    name,
    status="ok",
    eager=None,
    compile_=None,
    n=0,
    c=0,
    speedups=(),
    factor=None,
    predicted=False,
    suspicious=0,
    busy=0,
):
    return {
        "name": name,
        "status": status,
        "reason": None if status == "ok" else "why",
        "speedup_eager": eager,
        "speedup_compile": compile_,
        "roofline_fraction": None,
        "kernel_path": None,
        "candidates": n,
        "correct_candidates": c,
        "suspicious_candidates": suspicious,
        "busy_host_timings": busy,
        "candidate_speedups": list(speedups),
        "run_id": None,
        "compile_factor": factor,
        "predicted": predicted,
    }


def bench_report(*rows_, baseline="eager"):
    return {"options": {"baseline": baseline}, "metrics": {}, "problems": list(rows_)}


SIZED_PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


rows, cols = 3, 5
SIZES = {"cpu": {"rows": 8, "cols": 16}, "gpu": {"rows": 64, "cols": 128}}


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
"""
