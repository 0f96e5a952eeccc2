"""The cores' placement probe (harness/core_link.py) on this host: it builds a small library with g++."""

from __future__ import annotations

import os
import shutil

import pytest

from agentkern.harness import core_link

multi_core = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2 or not shutil.which("g++"), reason="one core or no g++"
)


@multi_core
def test_the_probe_times_a_round_trip_from_the_first_core_to_each_other_one():
    cpus = sorted(os.sched_getaffinity(0))
    found = core_link.probe()
    assert found["cpus"] == cpus[: 1 + core_link.MAX_PAIRS]
    assert len(found["round_trip_ns"]) == len(found["cpus"]) - 1
    # a cache line between two cores: more than a nanosecond, far less than a scheduler tick
    assert all(1.0 < trip < 1e6 for trip in found["round_trip_ns"])


@multi_core
def test_one_core_has_nothing_to_be_apart_from():
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})
    try:
        assert core_link.probe() == {"unavailable": "one core: nothing to be apart from"}
    finally:
        os.sched_setaffinity(0, allowed)
