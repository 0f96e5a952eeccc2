"""Render what an LLM planner and coder see in the second iteration of a run: a parent kernel (a C++ relu),
its verdict, and a failed attempt from its lineage. docs/llm.md shows this script's output.

    python examples/render_prompts.py [--window 4096]

No model, no harness: the candidates are made up, the templates (prompts/*.j2) and the policy's fitting to
the context window are the real ones.
"""

import argparse
import tempfile
from pathlib import Path

from agentkern import candidates as population
from agentkern.models.scripted import ScriptedModel
from agentkern.policies import lineage
from agentkern.policies.llm import LLMPolicy
from agentkern.targets import get_target

PARENT = '''import ctypes
import torch
import torch.nn as nn
from agentkern.native import compile_cpp, ptr

CPP_SOURCE = r"""
extern "C" void relu(const float* x, float* y, long n) {
    #pragma omp parallel for
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""
lib = compile_cpp(CPP_SOURCE, name="relu")
lib.relu.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        lib.relu(ptr(x.contiguous()), ptr(y), x.numel())
        return y
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=None, help="a context window to fit, in tokens")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    (folder / "001-0.py").write_text(PARENT)
    (folder / "002-0.py").write_text(PARENT.replace("0.f;", "0.f; y[i+1] = 0.f;"))
    wrong = {
        "status": "incorrect",
        "error": "output differs from the reference: 524288 of 1048576 elements (50.00%): 524288 beyond atol=rtol=0.0001, max abs diff 4.1; first at [0, 1] (got 0, expected 1.27), worst at [811, 7] (got 0, expected 4.1)",
        "details": {"failed_trial": {"trial": 0, "seed": 1, "inputs": "fresh"}},
    }
    base = {"params": {}, "predicted": False, "verdict": {}, "bound": None, "kernel_ms": None, "reference_ms": None}
    candidates = [
        {
            **base,
            "id": "001-0",
            "iteration": 1,
            "strategy": "relu-omp/flat/0",
            "parent": None,
            "path": str(folder / "001-0.py"),
            "status": "ok",
            "correct": True,
            "speedup": 0.93,
            "kernel_ms": 0.52,
            "reference_ms": 0.48,
            "roofline_fraction": 0.34,
            "bound": "memory",
        },
        {
            **base,
            "id": "002-0",
            "iteration": 2,
            "strategy": "relu-omp/unrolled/0",
            "parent": "001-0",
            "path": str(folder / "002-0.py"),
            "status": "incorrect",
            "correct": False,
            "speedup": None,
            "roofline_fraction": None,
            "error": wrong["error"],
            "report": lineage.report_of(wrong),
        },
    ]
    problem = Path(__file__).resolve().parent.parent / "kernels_dataset" / "problems" / "relu.py"
    ctx = {
        "iteration": 3,
        "stage": 1,
        "elites": population.summary(candidates),
        "best": None,
        "tried": [],
        "candidates": candidates,
        "beam": 1,
        "feedback": "002-0 (relu-omp/unrolled/0): incorrect: " + wrong["error"],
        "problem_source": problem.read_text(),
        "target": get_target("cpu"),
        "backend": "cpp",
        "run_id": "example",
        "knowledge": [],
    }
    shown: list[str] = []
    model = ScriptedModel(["STRATEGY: relu-omp/simd\nUse AVX-512 loads and stores, 4 vectors per step.", "(reply)"])
    model.context_window = args.window

    def record(agent, iteration, prompt, reply, error, retrieved=None, notes=None):
        shown.append(f"===== {agent} prompt ({len(prompt)} characters; {notes}) =====\n{prompt}")

    policy = LLMPolicy(model, record, window=args.window)
    policy.write(policy.plan(ctx), ctx, 1)
    print("\n".join(shown))


if __name__ == "__main__":
    main()
