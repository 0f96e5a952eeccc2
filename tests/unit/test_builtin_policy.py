"""The built-in policy's search: neighbours of the elites, never a parameter set twice, deterministic."""

import pytest

from agentkern.policies.builtin import templates
from agentkern.policies.builtin.policy import BuiltinPolicy

SPACE = {
    1: {"block": [2, 4]},
    2: {"block": [2, 4], "algo": ["a", "b"]},
    3: {"block": [2, 4], "algo": ["a", "b"], "sched": ["s", "d"]},
}


@pytest.fixture
def policy(monkeypatch):
    monkeypatch.setattr(templates, "param_space", lambda family, backend, stage_max=3, features=None: SPACE[stage_max])
    monkeypatch.setattr(
        templates, "default_params", lambda family, backend, features=None: {"block": 2, "algo": "a", "sched": "s"}
    )
    monkeypatch.setattr(templates, "render", lambda spec, params, backend: f"# {params}\nclass ModelNew: pass\n")
    return BuiltinPolicy({"family": "softmax"}, "cpp", seed=3)


def ctx(iteration, stage, elites=(), tried=()):
    return {"iteration": iteration, "stage": stage, "elites": list(elites), "tried": list(tried)}


def test_first_iteration_starts_from_the_defaults(policy):
    c = ctx(1, 1)
    drafts = policy.write(policy.plan(c), c, beam=2)
    assert drafts[0]["params"] == {"block": 2, "algo": "a", "sched": "s"} and drafts[0]["parent"] is None
    assert drafts[1]["params"] == {"block": 4, "algo": "a", "sched": "s"}  # the only stage-1 move
    assert drafts[0]["strategy"] == "softmax:algo=a/block=2,sched=s"


def test_never_proposes_a_tried_set_and_falls_back_to_other_elites(policy):
    best = {"id": "001-0", "params": {"block": 2, "algo": "a", "sched": "s"}, "speedup": 2.0}
    other = {"id": "002-1", "params": {"block": 4, "algo": "b", "sched": "s"}, "speedup": 1.5}
    tried = [
        best["params"],
        other["params"],
        {"block": 4, "algo": "a", "sched": "s"},
        {"block": 2, "algo": "b", "sched": "s"},
        {"block": 2, "algo": "a", "sched": "d"},
    ]
    c = ctx(5, 3, elites=[best, other], tried=tried)
    plan = {"parent": "001-0", "parent_params": best["params"], "stage": 3}
    drafts = policy.write(plan, c, beam=2)
    # Every neighbour of 001-0 was tried: the one untried neighbour of 002-1 is proposed.
    assert [(d["parent"], d["params"]) for d in drafts] == [("002-1", {"block": 4, "algo": "b", "sched": "d"})]
    assert all(d["params"] not in tried for d in drafts)
    assert policy.write(plan, c, beam=2) == drafts  # same seed, same proposals


def test_an_exhausted_space_gives_no_drafts(policy):
    everything = [{"block": b, "algo": a, "sched": s} for b in (2, 4) for a in "ab" for s in "sd"]
    best = {"id": "001-0", "params": everything[0], "speedup": 1.0}
    c = ctx(9, 3, elites=[best], tried=everything)
    assert policy.write({"parent": "001-0", "parent_params": everything[0], "stage": 3}, c, beam=2) == []


@pytest.mark.parametrize("features, wide_allowed", [(frozenset(), False), (frozenset({"avx512f"}), True)])
def test_the_host_features_decide_which_micro_kernels_are_proposed(monkeypatch, features, wide_allowed):
    monkeypatch.setattr(templates, "render", lambda spec, params, backend: "class ModelNew: pass\n")
    policy = BuiltinPolicy({"family": "matmul"}, "cpp", seed=1, features=features)
    wide = {"12x32", "14x32", "6x64", "8x32"}
    proposed = set()
    for it in range(1, 6):
        c = ctx(it, 1)
        proposed |= {d["params"]["micro"] for d in policy.write(policy.plan(c), c, beam=4)}
    assert proposed and bool(proposed & wide) == wide_allowed
    assert (policy.plan(ctx(1, 1))["parent_params"]["micro"] in wide) == wide_allowed


def test_every_knob_of_a_stage_is_moved_once_before_any_is_moved_twice(monkeypatch):
    # Three values of one knob beside two-valued ones: with moves drawn value by value, a beam of three could
    # spend itself on the many-valued knob (the elementwise template's chunk sizes before its store mode).
    space = {"chunk": [1, 2, 3, 4], "stream": ["auto", "never"], "simd": ["avx2", "avx512"]}
    monkeypatch.setattr(templates, "param_space", lambda family, backend, stage_max=3, features=None: space)
    defaults = {"chunk": 1, "stream": "auto", "simd": "avx2"}
    monkeypatch.setattr(templates, "default_params", lambda family, backend, features=None: defaults)
    monkeypatch.setattr(templates, "render", lambda spec, params, backend: "class ModelNew: pass\n")
    for seed in range(20):
        policy = BuiltinPolicy({"family": "elementwise"}, "cpp", seed=seed)
        c = ctx(1, 1)
        drafts = policy.write(policy.plan(c), c, beam=4)
        moved = [next(k for k in defaults if d["params"][k] != defaults[k]) for d in drafts[1:]]
        assert sorted(moved) == ["chunk", "simd", "stream"], (seed, moved)
