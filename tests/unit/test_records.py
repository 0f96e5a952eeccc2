"""The typed records (agentkern/types.py) match what the loop really writes, and each shared fact has one
definition: speedup@k, the families, the target names."""

import json
import sqlite3

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from loop_fakes import FakeEvaluate, ListPolicy

from agentkern import candidates, types
from agentkern.bench import metrics
from agentkern.loop import run as optimize
from agentkern.loop.deps import OptimizeOptions
from agentkern.policies.base import Policy
from agentkern.policies.builtin import templates
from agentkern.traces import RunStore
from agentkern.traces.trace import load


def keys_fit(record: dict, typed) -> None:
    """Every key of the record is declared, and every required key is there."""
    assert set(record) <= set(typed.__annotations__), set(record) - set(typed.__annotations__)
    assert typed.__required_keys__ <= set(record), typed.__required_keys__ - set(record)


def test_the_records_of_a_run_have_the_declared_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTKERN_HOME", str(tmp_path / "home"))
    result = optimize.run(
        OptimizeOptions(problem="relu", target="cpu", beam=2, max_iters=2),
        policy=ListPolicy(),
        evaluate=FakeEvaluate([1.2, None, 1.5]),
        checkpointer=SqliteSaver(sqlite3.connect(tmp_path / "cp.db", check_same_thread=False)),
    )
    keys_fit(result, types.RunResult)
    keys_fit(result["best"], types.BestKernel)
    store = RunStore(tmp_path / "home" / "runs.db")
    trace = load(store, result["run_id"])
    assert len(trace.candidates) == 4
    for stored in trace.candidates:
        keys_fit(stored, types.StoredCandidate)
        keys_fit(stored["verdict"], types.VerdictSummary)
    coder_steps = [s for s in trace.steps if s.row["agent"] == "coder"]
    for draft in coder_steps[0].payload["drafts"]:
        assert "source" not in draft  # the store keeps drafts without their code
        keys_fit(draft, types.Draft)
    verdicts = sorted((tmp_path / "home" / "runs" / result["run_id"] / "candidates").glob("*.verdict.json"))
    assert len(verdicts) == 4
    for path in verdicts:
        keys_fit(json.loads(path.read_text())["verdict"], types.Verdict)
    store.close()


def test_speedup_at_k_is_one_definition_for_a_run_and_a_suite():
    records = [
        {"id": "001-0", "correct": False, "speedup": None},
        {"id": "001-1", "correct": True, "speedup": 1.5},
        {"id": "002-0", "correct": True, "speedup": 2.0},
        {"id": "002-1", "correct": False, "speedup": 3.0},  # timed but wrong: never counts
    ]
    speedups = [r["speedup"] if r["correct"] else None for r in records]
    for k in (1, 2, 3, 4, 10, None):
        run_value = candidates.speedup_at_k(records, k)
        assert run_value == candidates.speedup_at_k_of(speedups, k)
        if k is not None:
            assert metrics.speedup_at_k([speedups], k) == run_value
    assert [candidates.speedup_at_k(records, k) for k in (1, 2, 3, None)] == [0.0, 1.5, 2.0, 2.0]


def test_the_families_are_the_templates_and_the_cost_models():
    assert set(templates.families()) == set(types.FAMILIES)
    assert set(types.GEMM_FAMILIES) <= set(types.FAMILIES) and set(types.ROW_FAMILIES) <= set(types.FAMILIES)
    assert set(types.STATUSES) < set(types.CANDIDATE_STATUSES)


def test_the_knowledge_base_names_the_catalogs_targets_without_measuring_the_host(monkeypatch):
    from agentkern.kb import sources
    from agentkern.targets import catalog, host

    def refuse(*args):
        raise AssertionError("listing target names measured the host")

    monkeypatch.setattr(host, "_measure_host", refuse)
    assert set(sources.TARGETS) == set(catalog.TARGET_NAMES)
    assert sources.GPUS == catalog.GPU_NAMES and "cpu" not in sources.GPUS


@pytest.mark.parametrize("name", ["builtin", "llm"])
def test_both_policies_implement_the_interface(name):
    if name == "builtin":
        from agentkern.policies.builtin.policy import BuiltinPolicy as cls

        reads = False
    else:
        from agentkern.policies.llm import LLMPolicy as cls

        reads = True
    assert Policy in cls.__mro__ and cls.reads_knowledge is reads
