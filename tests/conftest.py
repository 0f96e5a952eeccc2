import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def agentkern_home(tmp_path_factory):
    """One AGENTKERN_HOME per test session: isolated from the user's, shared so C++ builds are cached."""
    home = os.environ.get("AGENTKERN_TEST_HOME") or str(tmp_path_factory.mktemp("agentkern-home"))
    os.environ["AGENTKERN_HOME"] = home
    return Path(home)


def read_expectation(path: Path) -> tuple[str, str, str | None]:
    """(problem, status, reason code) from a corpus file's `# problem:` and `# expect:` lines."""
    text = path.read_text()
    problem = re.search(r"^# problem:\s*(\S+)", text, re.M)
    expect = re.search(r"^# expect:\s*(\S+)(?:\s+(\S+))?", text, re.M)
    assert problem and expect, f"{path} lacks its '# problem:' / '# expect:' header"
    return problem.group(1), expect.group(1), expect.group(2)


def fast_options(**overrides):
    """Harness options for tests: full correctness checking, a short timing phase."""
    from agentkern.types import EvalOptions

    opts = EvalOptions(time_budget_s=0.05, min_timed_calls=3, max_timed_calls=5, run_timeout_s=60, memory_limit_gb=4)
    for key, value in overrides.items():
        setattr(opts, key, value)
    return opts
