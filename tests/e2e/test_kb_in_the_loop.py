"""The knowledge base in the agent loop: the documents an optimise run's prompts show, `kb add --from-run`
making a run's best kernel the first exemplar, and the built-in policy starting from it. Real runs: the
harness builds and times each candidate."""

import json
import sqlite3
from pathlib import Path

import pytest
from support import fast_options, run_main


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory):
    """An optimise run with a scripted LLM (one iteration, one candidate) and the default knowledge base."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from relu_replies import GOOD

    from agentkern.loop import run as optimize
    from agentkern.loop.deps import OptimizeOptions
    from agentkern.models.scripted import ScriptedModel

    tmp = tmp_path_factory.mktemp("kb-run")
    model = ScriptedModel(["STRATEGY: relu-omp/basic\nA flat OpenMP loop.", GOOD])
    store = optimize.open_store()
    run_id = optimize.new_run_id("relu")
    opts = fast_options(run_timeout_s=30)

    def evaluate(problem_path, path, target_name, _options):
        from agentkern.harness.evaluate import evaluate as harness_evaluate

        return harness_evaluate(problem_path, path, target_name, opts)

    original = optimize.new_run_id
    optimize.new_run_id = lambda problem: run_id
    try:
        result = optimize.run(
            OptimizeOptions(problem="relu", target="cpu", beam=1, max_iters=1, out=str(tmp / "out")),
            policy=optimize.llm_policy(model, store, run_id),
            evaluate=evaluate,
            checkpointer=SqliteSaver(sqlite3.connect(tmp / "cp.db", check_same_thread=False)),
        )
    finally:
        optimize.new_run_id = original
    return store, run_id, result


def test_an_optimise_run_shows_the_retrieved_documents_in_planner_and_coder_prompts(scripted_run):
    store, run_id, result = scripted_run
    calls = store.model_calls(run_id)
    assert [c["agent"] for c in calls] == ["planner", "coder"]
    for call in calls:
        retrieved = json.loads(call["retrieved"])
        assert retrieved, f"the {call['agent']} call recorded no retrieved documents"
        assert "Reference material from the knowledge base" in call["prompt"]
        for doc in retrieved:
            assert doc["title"] in call["prompt"], f"{doc['title']!r} missing from the {call['agent']} prompt"
        # The problem is relu on a CPU with C++: the exemplar kernel retrieved is a C++ relu.
        exemplars = [d for d in retrieved if d["kind"] == "exemplar"]
        assert exemplars and "relu" in exemplars[0]["title"] and "cpp" in exemplars[0]["title"]
    planner_step = next(s for s in store.steps(run_id) if s["agent"] == "planner")
    assert json.loads(planner_step["payload"])["retrieved"] == [d["id"] for d in json.loads(calls[0]["retrieved"])]


def test_kb_add_from_run_makes_the_best_kernel_the_first_exemplar_for_that_target(capsys, scripted_run):
    from agentkern.kb.retrieve import Retriever
    from agentkern.problems import load_problem
    from agentkern.targets import get_target

    store, run_id, result = scripted_run
    assert result["best"] is not None
    code, out, err = run_main(capsys, "kb", "add", "--from-run", run_id, "--json")
    assert code == 0, err
    added = json.loads(out)
    assert added["id"] == f"run-{run_id}" and added["target"] == "cpu"
    text = Path(added["path"]).read_text()
    assert f"speedup: {round(result['best']['speedup'], 4)}" in text and "hardware:" in text and "ModelNew" in text
    assert "\nhost: " in text  # the CPU model it was tuned on: it seeds runs on that model only
    problem = load_problem("relu")
    docs = Retriever()(problem.source, get_target("cpu"), "cpp", name="relu")
    exemplar = [d for d in docs if d["kind"] == "exemplar"][0]
    assert exemplar["id"] == f"run-{run_id}" and exemplar["speedup"] == pytest.approx(
        result["best"]["speedup"], rel=1e-3
    )
    assert "? x[i] : 0.f;" in exemplar["excerpt"]  # the kernel itself reaches the prompt


def test_the_builtin_policy_starts_from_the_best_run_added_to_the_knowledge_base(capsys):
    """`kb add --from-run` of a built-in run: the next built-in run on that problem and target starts its
    search at that run's best parameters, not at the template defaults."""
    from agentkern.loop import run as optimize
    from agentkern.loop.deps import OptimizeOptions
    from agentkern.policies.builtin import templates

    def run(seed):
        opts = OptimizeOptions(problem="relu", target="cpu", max_iters=1, beam=2, seed=seed)
        return optimize.run(opts)

    first = run(seed=3)
    store = optimize.open_store()
    best = [c for c in store.candidates(first["run_id"]) if c["candidate_id"] == first["best"]["candidate"]][0]
    best_params = json.loads(best["params"])
    # The run says what it chose and what it was timed on (loop/winning_params.py).
    assert first["params_won"]["params"] == best_params
    assert first["params_won"]["candidate"] == first["best"]["candidate"]
    assert "cores" in first["params_won"]["host"]
    code, out, err = run_main(capsys, "kb", "add", "--from-run", first["run_id"], "--json")
    assert code == 0, err
    assert "params:" in Path(json.loads(out)["path"]).read_text()
    second = run(seed=4)
    plan = [s for s in store.steps(second["run_id"]) if s["agent"] == "planner"][0]
    assert f"the best known kernel (run-{first['run_id']})" in plan["summary"]
    assert json.loads(plan["payload"])["parent_params"] == best_params
    if best_params != templates.default_params("elementwise", "cpp"):  # the defaults won: nothing to tell apart
        first_candidate = store.candidates(second["run_id"])[0]
        assert json.loads(first_candidate["params"]) == best_params
