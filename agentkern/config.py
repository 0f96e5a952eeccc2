"""Where agentkern keeps its state (AGENTKERN_HOME, default ~/.agentkern) and finds its data (the folders
prompts/, knowledge_base/ and kernels_dataset/)."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
# A wheel ships the data folders inside the package (setup.py maps them to agentkern/data/<name>); an editable
# install or a source checkout has them beside the package, at the top of the repository.
PACKAGED_DATA = PACKAGE / "data"
CHECKOUT = PACKAGE.parent


def home() -> Path:
    root = Path(os.environ.get("AGENTKERN_HOME") or Path.home() / ".agentkern").expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_dir(kind: str) -> Path:
    """A cache folder under AGENTKERN_HOME/cache, e.g. cache_dir("cpp") for compiled kernels."""
    path = home() / "cache" / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def data_root() -> Path:
    """The folder holding prompts/, knowledge_base/ and kernels_dataset/: AGENTKERN_DATA when set, else the
    installed package's data/ (a wheel), else the checkout (an editable install)."""
    override = os.environ.get("AGENTKERN_DATA")
    if override:
        return Path(override).expanduser()
    return PACKAGED_DATA if PACKAGED_DATA.is_dir() else CHECKOUT


def dataset_dir() -> Path:
    return data_root() / "kernels_dataset"
