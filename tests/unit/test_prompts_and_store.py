"""Every prompt template renders with a realistic context; the run store migrates and keeps rows unique."""

import pytest

from agentkern.policies import prompts
from agentkern.targets import get_target
from agentkern.traces.store import MIGRATIONS, RunStore

CTX = {
    "iteration": 2,
    "stage": 2,
    "problem_source": "class Model(nn.Module): ...",
    "backend": "cpp",
    "elites": [
        {"id": "001-0", "strategy": "softmax:online/vec8", "speedup": 1.42, "roofline_fraction": 0.31, "params": {}}
    ],
    "feedback": "001-1 (softmax:two-pass/vec4): incorrect: output differs",
    "best": None,
    "tried": [],
    "run_id": "r",
}


@pytest.mark.parametrize("name", prompts.template_names())
def test_every_prompt_renders(name):
    target = get_target("cpu" if name.endswith("cpp") or name == "planner" else "h100")
    text = prompts.render(name, target=target, plan_text="STRATEGY: softmax:online/vec8", **CTX)
    assert "class Model(nn.Module)" in text
    assert "001-1" in text  # the critic's feedback reaches every agent
    if name.startswith("coder"):
        assert "ModelNew" in text and "STRATEGY: softmax:online/vec8" in text
    else:
        assert "1.42x" in text and "31% of roofline" in text


def test_prompts_exist_for_planner_and_each_backend():
    assert {"planner", "coder_cpp", "coder_triton", "coder_cuda"} <= set(prompts.template_names())


def test_store_migrates_once_and_replaces_replayed_rows(tmp_path):
    path = tmp_path / "runs.db"
    store = RunStore(path)
    store.start_run("r1", "relu.py", "cpu", "cpp", "builtin", {"beam": 2})
    store.step("r1", 1, "compiler", "001-0: ok", key="001-0")
    store.step("r1", 1, "compiler", "001-0: ok (replayed)", key="001-0")
    record = {"id": "001-0", "iteration": 1, "strategy": "s/v", "status": "ok", "correct": True, "speedup": 1.5}
    store.candidate("r1", record)
    store.candidate("r1", {**record, "speedup": 1.6})
    store.close()
    reopened = RunStore(path)  # second open: migrations already applied
    assert [r[0] for r in reopened.db.execute("SELECT number FROM _migrations")] == list(range(1, len(MIGRATIONS) + 1))
    assert [s["summary"] for s in reopened.steps("r1")] == ["001-0: ok (replayed)"]
    assert [c["speedup"] for c in reopened.candidates("r1")] == [1.6]
    assert reopened.run("r1")["status"] == "running"


def _open_store(path, results):
    from agentkern.traces.store import RunStore

    try:
        RunStore(path).db.close()
        results.put("ok")
    except Exception as exc:  # noqa: BLE001 - the test reports what each process got
        results.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_a_new_store_at_once_all_get_it(tmp_path):
    """`bench --workers 2` on a fresh AGENTKERN_HOME: switching a new file to WAL can fail at once with
    "database is locked" (seen: 1 of 30 rounds of 4 processes); the store tries again."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    outcomes = []
    for round_ in range(6):
        results = context.Queue()
        procs = [context.Process(target=_open_store, args=(tmp_path / f"{round_}.db", results)) for _ in range(6)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        outcomes += [results.get(timeout=5) for _ in procs]
    assert outcomes == ["ok"] * len(outcomes)
