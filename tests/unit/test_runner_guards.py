"""The candidate runner's in-process guards: whose frame a call comes from, decided cheaply."""

from __future__ import annotations

import os
import sys

from agentkern.harness.guards import AuditGuard


def _frame_in(filename: str):
    """A frame whose code claims to come from `filename` (as a module imported from there would)."""
    namespace: dict = {"sys": sys}
    exec(compile("def here():\n    return sys._getframe(0)\n", filename, "exec"), namespace)
    return namespace["here"]()


def test_a_frame_of_the_candidate_file_is_the_candidate_and_torch_is_not(tmp_path):
    import torch

    candidate = tmp_path / "candidate.py"
    candidate.write_text("")
    guard = AuditGuard(str(candidate))
    assert guard.from_candidate(_frame_in(str(candidate)))
    assert guard.from_candidate(_frame_in("<string>"))  # code the candidate generated with exec
    assert not guard.from_candidate(_frame_in(torch.__file__))


def test_a_link_to_the_candidate_file_is_the_candidate(tmp_path):
    candidate = tmp_path / "candidate.py"
    candidate.write_text("")
    link = tmp_path / "alias.py"
    link.symlink_to(candidate)
    assert AuditGuard(str(candidate)).from_candidate(_frame_in(str(link)))


def test_each_file_is_resolved_once(tmp_path, monkeypatch):
    """torch's own mode exits pass the dispatch-switch traps on every timed block: resolving the real path of
    torch's file each time cost the candidate 9 lstat calls a block (20-50 us, charged to it alone)."""
    import torch

    guard = AuditGuard(str(tmp_path / "candidate.py"))
    resolved: list[str] = []
    real = os.path.realpath

    def counting(path, *args, **kwargs):
        resolved.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", counting)
    frame = _frame_in(torch.__file__)
    for _ in range(5):
        assert not guard.from_candidate(frame)
    assert resolved == [torch.__file__]
