"""CPython 3.11's AST constructor keeps its recursion depth in per-interpreter state: two threads parsing at
once can fail with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905). agentkern
parses under one lock (helpers.parse_python), holds it while torch traces a model (which parses signatures
through inspect), and tries a parse that met the race again."""

import ast

import pytest
import torch

from agentkern import helpers


def test_a_parse_that_meets_the_race_is_tried_again_and_other_errors_are_not(monkeypatch):
    real, failures = ast.parse, []

    def racing(source, filename="<unknown>"):
        if len(failures) < 2:
            failures.append(1)
            raise SystemError("AST constructor recursion depth mismatch (before=36, after=63)")
        return real(source, filename=filename)

    monkeypatch.setattr(ast, "parse", racing)
    assert isinstance(helpers.parse_python("x = 1\n"), ast.Module) and len(failures) == 2

    def always(source, filename="<unknown>"):
        failures.append(1)
        raise SystemError("AST constructor recursion depth mismatch (before=1, after=2)")

    failures.clear()
    monkeypatch.setattr(ast, "parse", always)
    with pytest.raises(SystemError):
        helpers.parse_python("x = 1\n")
    assert len(failures) == helpers._AST_RACE_RETRIES + 1

    def other(source, filename="<unknown>"):
        failures.append(1)
        raise SystemError("something else")

    failures.clear()
    monkeypatch.setattr(ast, "parse", other)
    with pytest.raises(SystemError, match="something else"):
        helpers.parse_python("x = 1\n")
    assert len(failures) == 1


def test_tracing_a_model_holds_the_parser_lock(monkeypatch):
    # make_fx parses signatures through inspect (58 parses for a small model on a cold process; fewer once
    # torch's caches are warm): the whole trace runs under the lock.
    from torch.fx.experimental import proxy_tensor

    from agentkern.policies.builtin.graph_trace import trace_graph

    depth, held, real_make_fx = [], [], proxy_tensor.make_fx

    class RecordingLock:
        def __enter__(self):
            depth.append(1)

        def __exit__(self, *exc):
            depth.pop()

    def watched(*args, **kwargs):
        traced = real_make_fx(*args, **kwargs)

        def run(*inputs):
            held.append(bool(depth))
            return traced(*inputs)

        return run

    monkeypatch.setattr(helpers, "_AST_LOCK", RecordingLock())
    monkeypatch.setattr(proxy_tensor, "make_fx", watched)

    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.gelu(torch.relu(x) + 1)

    trace_graph(Model(), [torch.randn(3, 4)])
    assert held == [True]
