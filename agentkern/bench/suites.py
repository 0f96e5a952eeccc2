"""What `agentkern bench SUITE` runs: SUITE -> a list of problem files, without importing any of them.

SUITE is one of:
- `kernels_dataset` (or `kernels_dataset/problems`): the problems shipped in kernels_dataset/problems/;
- a name under kernels_dataset/ (a folder there with a problems/ folder, or holding problem files);
- a folder of .py problem files (KernelBench format);
- a KernelBench checkout: its level folders (level1/, level2/, ... at its top or under KernelBench/),
  problems named `level1/19_ReLU` and so on; a single level folder is a plain folder of problems.
Files starting with `_` are skipped. Whether a file really is a problem is checked when it runs, so a
broken file is a row with its reason rather than the end of the suite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agentkern.config import dataset_dir
from agentkern.errors import UserError


@dataclass(frozen=True)
class ProblemRef:
    name: str  # unique within the suite: the file's stem, or level1/<stem> in a KernelBench checkout
    path: Path


@dataclass(frozen=True)
class Suite:
    name: str
    root: Path
    problems: list[ProblemRef]


def _files(folder: Path) -> list[Path]:
    return sorted((p for p in folder.glob("*.py") if not p.name.startswith("_")), key=_natural)


def _natural(path: Path) -> list:
    """KernelBench numbers its files (1_..., 2_..., 10_...): sort 2 before 10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def _levels(folder: Path) -> list[Path]:
    for base in (folder, folder / "KernelBench"):
        levels = sorted((d for d in base.glob("level*") if d.is_dir() and _files(d)), key=_natural)
        if levels:
            return levels
    return []


def _folder_for(suite: str) -> Path:
    given = Path(suite).expanduser()
    if given.is_dir():
        return given
    data = dataset_dir()
    for candidate in (
        data / suite / "problems",
        data / suite,
        data / "problems" if suite == "kernels_dataset" else None,
    ):
        if candidate is not None and candidate.is_dir() and (_files(candidate) or _levels(candidate)):
            return candidate
    known = ["kernels_dataset", *sorted(d.name for d in data.iterdir() if d.is_dir() and (d / "problems").is_dir())]
    raise UserError(
        f"unknown suite {suite!r}: not a folder, and not one of {', '.join(dict.fromkeys(known))} "
        "(or a KernelBench checkout)"
    )


def resolve_suite(suite: str, limit: int | None = None, only: list[str] | None = None) -> Suite:
    folder = _folder_for(suite)
    if (folder / "problems").is_dir() and not _files(folder):
        folder = folder / "problems"
    levels = _levels(folder)
    if levels:
        problems = [ProblemRef(f"{level.name}/{p.stem}", p.resolve()) for level in levels for p in _files(level)]
    else:
        problems = [ProblemRef(p.stem, p.resolve()) for p in _files(folder)]
    if not problems:
        raise UserError(f"suite {suite!r} ({folder}) holds no problem files (*.py)")
    if only:
        unknown = [n for n in only if not any(p.name == n or p.path.stem == n for p in problems)]
        if unknown:
            raise UserError(f"--only: no problem {unknown[0]!r} in suite {suite!r}")
        problems = [p for p in problems if p.name in only or p.path.stem in only]
    return Suite(name=suite, root=folder.resolve(), problems=problems[:limit] if limit else problems)
