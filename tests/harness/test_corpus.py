"""Every cheating kernel in tests/harness/cheats must be rejected with its reason (`# expect: rejected CODE`)
or, where its trick is wrong numerics, judged incorrect (`# expect: incorrect`); every broken kernel in
tests/harness/broken must get its verdict (crash, hang, syntax error, OOM, ...) without taking the harness down."""

from pathlib import Path

import pytest
from support import ROOT, fast_options, read_expectation

CHEATS = sorted((ROOT / "tests" / "harness" / "cheats").glob("*.py"))
BROKEN = sorted((ROOT / "tests" / "harness" / "broken").glob("*.py"))


def _evaluate(path: Path):
    from agentkern.harness.evaluate import evaluate

    problem, status, code = read_expectation(path)
    if code == "side_stream":
        pytest.skip("side streams exist only on a GPU; see tests/gpu/test_gpu.py")
    # Hangs are cut short so the suite stays fast; the limit itself is what is under test. Every other kernel
    # keeps fast_options' run limit and gets 120 s for its start and build (both under the compile limit): beside
    # another test on 2 cores they can pass 20 s, a timeout rather than the verdict under test.
    limits = {"run_timeout_s": 8, "compile_timeout_s": 20} if status == "timeout" else {"compile_timeout_s": 120}
    opts = fast_options(memory_limit_gb=3, **limits)
    return evaluate(problem, path, "cpu", opts), status, code


def test_corpus_is_not_empty():
    assert len(CHEATS) >= 18 and len(BROKEN) >= 10


@pytest.mark.parametrize("path", CHEATS, ids=lambda p: p.stem)
def test_cheat_is_rejected(path):
    """`# expect: rejected CODE`: caught and named; `# expect: incorrect`: defeated by design (what it tries to
    reach is not in its process, so its answer is simply wrong)."""
    result, status, code = _evaluate(path)
    assert status in ("rejected", "incorrect")
    assert result.status == status, f"{path.name}: {result.status}: {result.error}"
    if status == "rejected":
        assert result.details.get("rejected_because") == code, result.error
    assert result.correct is False and result.speedup is None


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_broken_kernel_gets_its_verdict(path):
    result, status, _ = _evaluate(path)
    assert result.status == status, f"{path.name}: {result.status}: {result.error}"
    assert result.correct is False
    assert result.error and "\n" not in result.error
