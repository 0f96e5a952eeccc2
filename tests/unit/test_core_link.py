"""The cores' placement probe (harness/core_link.py; measured for real in tests/harness/test_core_link_probe.py): across a measurement, a
measurement across which the host moved the cores taken again, and the bench's summary of it."""

from __future__ import annotations

import time

import pytest

from agentkern.bench.runner import _round_trip_range
from agentkern.bench.summary import _cores_line
from agentkern.harness import core_link, host_load
from agentkern.harness.session import timed_on_a_quiet_host


def _probed(*trips):
    return {"cpus": [0, 1], "round_trip_ns": list(trips)}


def test_a_change_beyond_the_ratio_is_a_move_and_the_farthest_pair_counts():
    assert not core_link.compare(_probed(210.0), _probed(320.0))["moved"]
    moved = core_link.compare(_probed(210.0, 230.0), _probed(680.0, 220.0))
    assert moved == {"cpus": [0, 1], "round_trip_ns": [230.0, 680.0], "moved": True}
    assert "moved this machine's cores" in core_link.note(moved) and "230 ns before, 680 ns after" in core_link.note(
        moved
    )
    assert core_link.note(core_link.compare(_probed(210.0), _probed(220.0))) is None
    assert core_link.compare({"unavailable": "one core: nothing to be apart from"}, _probed(1.0)) == {
        "unavailable": "one core: nothing to be apart from"
    }
    assert core_link.line({"unavailable": "x"}) == "cores: not probed (x)"


def _timed(monkeypatch, trips, attempts=3):
    probes = iter(_probed(t) for t in trips)
    monkeypatch.setattr(core_link, "probe", lambda: next(probes))
    quiet = {"others_share": 0.01, "steal_share": 0.0, "busy_share": 0.01, "disturbed": False}

    class Quiet:
        def __enter__(self):
            return type("W", (), {"result": lambda self: dict(quiet)})()

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(host_load, "watch", lambda root=None: Quiet())
    monkeypatch.setattr(time, "sleep", lambda s: None)
    phases, runs = [], iter(range(100))
    return timed_on_a_quiet_host(lambda: {"run": next(runs)}, attempts, enter_phase=phases.append), phases


def test_a_measurement_across_which_the_cores_moved_is_taken_again_and_the_steady_one_kept(monkeypatch):
    timing, phases = _timed(monkeypatch, [210.0, 690.0, 700.0, 680.0])
    assert timing["run"] == 1 and phases == ["timing, attempt 2 (the host moved its cores)"]
    assert timing["cores"]["round_trip_ns"] == [700.0, 680.0] and not timing["cores"]["moved"]
    assert timing["cores"]["attempts_moved"] == [True, False]


def test_cores_moving_in_every_attempt_are_said_and_a_single_attempt_is_measured_once(monkeypatch):
    timing, phases = _timed(monkeypatch, [210.0, 690.0, 700.0, 200.0, 210.0, 690.0])
    assert timing["run"] == 0 and len(phases) == 2 and timing["cores"]["attempts_moved"] == [True, True, True]
    assert core_link.note(timing["cores"]).startswith("the host moved this machine's cores while timed")
    timing, phases = _timed(monkeypatch, [210.0, 690.0], attempts=1)
    assert timing["cores"]["moved"] and phases == [] and "attempts_moved" not in timing["cores"]


def test_a_device_timing_is_not_probed(monkeypatch):
    monkeypatch.setattr(core_link, "probe", lambda: pytest.fail("probed for a GPU's timing"))
    timing = timed_on_a_quiet_host(lambda: {"run": 0}, 1, probe_cores=False)
    assert timing["cores"] == {"unavailable": "not probed on this device"}


def test_the_bench_gives_the_range_of_round_trips_and_says_when_the_cores_moved():
    import json

    stored = [json.dumps({"timing": {"cores": {"round_trip_ns": trips}}}) for trips in ([210.0, 230.0], [700.0, 650.0])]
    assert _round_trip_range(stored + [None, "not json"]) == [210.0, 700.0]
    assert _round_trip_range([None]) is None
    line = _cores_line([210.0, 700.0])[1]
    assert line.startswith("A cache line's round trip between the cores took 210-700 ns") and "moved" in line
    assert "moved" not in _cores_line([600.0, 700.0])[1] and _cores_line(None) == []
