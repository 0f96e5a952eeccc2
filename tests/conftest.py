import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def agentkern_home(tmp_path_factory):
    """One AGENTKERN_HOME per test session: isolated from the user's, shared so C++ builds are cached."""
    home = os.environ.get("AGENTKERN_TEST_HOME") or str(tmp_path_factory.mktemp("agentkern-home"))
    os.environ["AGENTKERN_HOME"] = home
    return Path(home)
