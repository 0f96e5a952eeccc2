"""Where agentkern keeps its state. Everything lives under AGENTKERN_HOME (default ~/.agentkern)."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    root = Path(os.environ.get("AGENTKERN_HOME") or Path.home() / ".agentkern").expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_dir(kind: str) -> Path:
    """A cache folder under AGENTKERN_HOME/cache, e.g. cache_dir("cpp") for compiled kernels."""
    path = home() / "cache" / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def project_root() -> Path:
    """The checkout agentkern runs from (editable install): it holds kernels_dataset/, prompts/, ..."""
    return Path(os.environ.get("AGENTKERN_DATA") or Path(__file__).resolve().parent.parent)


def dataset_dir() -> Path:
    return project_root() / "kernels_dataset"
