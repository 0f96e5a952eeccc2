"""The built-in policy's Triton templates: every family rendered with its defaults and other parameter sets
(builtin_problems.TRITON_CASES), each file judged by the real harness (on a machine without a GPU: the Triton
interpreter, timing unavailable). (The templates' parameters and refusals: tests/unit/test_builtin_triton_templates.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from builtin_problems import lazy_specs
from triton_problems import TRITON_CASES as CASES
from triton_problems import write_triton_problems

from agentkern.harness.evaluate import evaluate
from agentkern.policies.builtin import templates as T
from agentkern.types import EvalOptions

OPTS = EvalOptions(
    trials=2, time_budget_s=0.05, min_timed_calls=3, max_timed_calls=5, run_timeout_s=60, memory_limit_gb=4
)


@pytest.fixture(scope="module")
def problems(tmp_path_factory) -> dict[str, Path]:
    return write_triton_problems(tmp_path_factory.mktemp("triton-problems"))


@pytest.fixture(scope="module")
def specs(problems) -> dict[str, dict]:
    return lazy_specs(problems)


def judge(problem_path: Path, source: str, path: Path, pool=None):
    """The harness's verdict, in a fresh worker (or a WarmPool's spare)."""
    compile(source, str(path), "exec")
    path.write_text(source)
    return evaluate(problem_path, path, "h100", OPTS, pool=pool)


# ---- the harness's verdict --------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name, family, variants", CASES, ids=[c[0] for c in CASES])
def test_rendered_triton_kernels_pass_the_harness(problems, specs, tmp_path, name, family, variants):
    spec = specs[name]
    assert spec["family"] == family, spec.get("reason")
    for i, params in enumerate([{}] + variants):
        result = judge(problems[name], T.render(spec, params, "triton"), tmp_path / f"{name}_{i}.py")
        assert result.status == "ok", (params, result.error, result.details.get("log_tail"))
        assert result.correct and result.details["backend"] == "triton"
        if result.details["device"] == "cpu":  # no GPU: correctness through the interpreter, no timing
            assert result.speedup is None


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, params, pattern, replacement",
    [
        # the linear's fused GELU dropped: only the bias is left
        ("linear_gelu", {}, r"\n\s*y = 0\.5 \* y \* \(1\.0 \+ tl\.math\.erf\(.*\n", "\n"),
        # the online softmax no longer rescales the running sum when a later chunk raises the max
        ("log_softmax", {"BLOCK_N": 512}, r"s \* tl\.exp\(m - m_ref\)", "s"),
    ],
    ids=["no_gelu", "no_rescale"],
)
def test_a_wrong_variant_is_caught(problems, specs, tmp_path, name, params, pattern, replacement):
    """The harness cases above can fail: the same files, subtly broken, are judged incorrect."""
    source = T.render(specs[name], params, "triton")
    broken, count = re.subn(pattern, replacement, source)
    assert count == 1
    result = judge(problems[name], broken, tmp_path / f"{name}_broken.py")
    assert result.status == "incorrect" and not result.correct, (result.status, result.error)


@pytest.mark.slow
def test_warm_workers_run_triton_in_the_interpreter(problems, specs, tmp_path):
    """A spare worker imports torch, and with it triton, before its request arrives: it must have been
    started with TRITON_INTERPRET already set, or tl.sum is not the interpreter's and every kernel fails
    with "Cannot call @triton.jit'd outside of the scope of a kernel"."""
    from agentkern.harness.sandbox import WarmPool

    pool = WarmPool(tmp_path / "spares")
    try:
        source = T.render(specs["softmax"], {}, "triton")
        first = judge(problems["softmax"], source, tmp_path / "a.py", pool)
        second = judge(problems["softmax"], source, tmp_path / "b.py", pool)
    finally:
        pool.close()
    assert (first.status, second.status) == ("ok", "ok"), (first.error, second.error)
    assert second.details["warm_worker"] is True


@pytest.mark.slow
def test_optimize_for_an_absent_gpu_end_to_end(problems, tmp_path, monkeypatch):
    """`agentkern optimize --target h100` without the GPU: built-in Triton candidates, correct in the
    interpreter, ranked by predicted speedup, the best written out and marked predicted."""
    from agentkern import targets as targets
    from agentkern.loop import run as optimize
    from agentkern.loop.deps import OptimizeOptions

    monkeypatch.setattr(targets, "is_present", lambda target: False)  # even on a machine with an H100
    opts = OptimizeOptions(
        problem=str(problems["rms_hand"]), target="h100", max_iters=1, beam=2, out=str(tmp_path / "out")
    )
    result = optimize.run(opts)
    assert result["backend"] == "triton" and result["correct_candidates"] == 2
    best = result["best"]
    assert best["predicted"] is True and best["speedup"] > 1  # six eager kernels against one fused pass
    assert "triton.jit" in Path(best["path"]).read_text()
