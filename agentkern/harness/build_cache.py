"""Each candidate's builds, kept for the next evaluation of the same file, and for no other.

A candidate builds in its runner's scratch folder (the only one it can write). Sharing one build cache
between candidates would let one plant a library under the key of another's source (the key is only a
hash of what is built, and the builder is the candidate itself). So builds are kept per candidate file: the
judge copies them out of the scratch folder after the evaluation, under the hash of the solution's source,
and into the next scratch folder of an evaluation of that same source before its runner loads it. A file
can only ever load what it, or a byte-identical copy of it, built. (A trusted builder whose products any
candidate may load, checked by hash, is the next step: docs/harness.md.)
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

MAX_KEPT_BYTES = 512 * 2**20  # a build folder larger than this is not kept (a candidate filling its disk)


def key(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:24]


def _folder(source: str) -> Path:
    from agentkern.config import cache_dir

    return cache_dir("by-candidate") / key(source)


def restore(source: str, scratch_cache: Path) -> bool:
    """Copy the builds kept for `source` into a runner's cache folder; True when there were any."""
    kept = _folder(source)
    if not kept.is_dir():
        return False
    shutil.copytree(kept, scratch_cache, symlinks=True, dirs_exist_ok=True)
    return True


def keep(source: str, scratch_cache: Path) -> None:
    """Keep a runner's cache folder (after the runner is gone) for the next evaluation of `source`."""
    if not scratch_cache.is_dir() or _size(scratch_cache) > MAX_KEPT_BYTES:
        return
    target = _folder(source)
    staging = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(scratch_cache, staging, symlinks=True)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)


def _size(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total
