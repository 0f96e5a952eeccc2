"""The worker modes that load a candidate in the worker itself (the CUDA source capture, perf's counters)
run it in a runner's sandbox: it cannot write outside its work folder or see agentkern's home."""

import os
import textwrap

import pytest
from support import ROOT

from agentkern.harness import confine, jobs

pytestmark = pytest.mark.skipif(not confine.bwrap_status()[0], reason="needs bubblewrap")

ESCAPING_CUDA_CANDIDATE = textwrap.dedent(
    """
    import os
    import pathlib

    import torch
    from torch.utils.cpp_extension import load_inline

    for target in (os.environ.get("ESCAPE_TO", ""), os.path.join(os.environ.get("AGENTKERN_HOME", ""), "planted")):
        try:
            pathlib.Path(target).write_text("escaped")
        except OSError:
            pass

    CUDA_SRC = "__global__ void k(float* x) { x[threadIdx.x] = 0.0f; }"
    mod = load_inline("escaping", cpp_sources="void k_launch();", cuda_sources=CUDA_SRC, functions=["k_launch"])


    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return x
    """
)


def test_the_cuda_source_capture_runs_the_candidate_confined(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setenv("ESCAPE_TO", str(outside / "marker"))
    solution = tmp_path / "escaping_cuda.py"
    solution.write_text(ESCAPING_CUDA_CANDIDATE)
    workdir = jobs.work_folder("evals", "escaping")
    request = {
        "mode": "cuda_sources",
        "solution_path": str(solution),
        "problem_path": str(ROOT / "kernels_dataset/problems/relu.py"),
    }
    job = jobs.run_job(request, workdir, jobs.env("cpu", "cuda", None, workdir))
    result = job.outcome.result
    assert result is not None and result["status"] == "ok", job.outcome.log
    assert [c["name"] for c in result["captured"]] == ["escaping"]  # it still did its job
    assert not (outside / "marker").exists()
    assert not os.path.exists(os.path.join(os.environ["AGENTKERN_HOME"], "planted"))
