"""Hardware counters for the critic: perf stat's and ncu's CSV parsed, the answer for a target that is not
here, and the profiler asking for them once per improvement. (perf on a real kernel:
tests/harness/test_counters_real_kernel.py.)"""

import sqlite3

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from support import ROOT

from agentkern.harness import counters
from agentkern.harness.evaluate import hardware_counters
from agentkern.loop import run as optimize
from agentkern.loop.deps import OptimizeOptions

PERF_VM = """# started on Sun Nov 22 07:43:47 2026

34.71,msec,task-clock,34710968,100.00,0.012,CPUs utilized
5,,context-switches,34708714,100.00,144.047,/sec
1024,,page-faults,34695759,100.00,29.501,K/sec
<not supported>,,cycles,0,100.00,,
<not counted>,,instructions,0,100.00,,
"""

PERF_METAL = """1000000,,cycles,1000,100.00,,
2500000,,instructions,1000,100.00,2.50,insn per cycle
4000,,LLC-loads,1000,100.00,,
1000,,LLC-load-misses,1000,100.00,,
"""

NCU = """==PROF== Connected to process 4242
==PROF== Profiling "softmax_kernel": 0%....50%....100% - 9 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python","host","softmax_kernel","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","81.50"
"0","4242","python","host","softmax_kernel","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","62.25"
"0","4242","python","host","softmax_kernel","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","ratio","4.10"
"0","4242","python","host","softmax_kernel","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio","ratio","0.90"
"0","4242","python","host","softmax_kernel","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","smsp__average_warps_issue_stalled_wait_per_issue_active.ratio","ratio","0"
"1","4242","python","host","softmax_kernel","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","83.50"
"""


def test_perf_csv_keeps_counted_events_and_lists_the_rest():
    parsed = counters.parse_perf_csv(PERF_VM)
    assert parsed["values"] == {"task-clock": 34.71, "context-switches": 5.0, "page-faults": 1024.0}
    assert parsed["missing"] == ["cycles", "instructions"]
    derived = counters.derive_cpu(parsed["values"], loop_ms=17.355, calls=20)
    assert derived["cpus_utilized"] == pytest.approx(2.0)
    assert derived["page_faults_per_call"] == pytest.approx(51.2)
    metal = counters.derive_cpu(counters.parse_perf_csv(PERF_METAL)["values"])
    assert metal["ipc"] == pytest.approx(2.5) and metal["llc_miss_rate"] == pytest.approx(0.25)


def test_ncu_csv_gives_means_over_launches_and_the_top_stalls():
    parsed = counters.parse_ncu_csv(NCU)
    assert parsed["values"]["dram_throughput_pct"] == pytest.approx(82.5)
    assert parsed["values"]["achieved_occupancy_pct"] == pytest.approx(62.25)
    assert [s["reason"] for s in parsed["top_stalls"]] == ["long_scoreboard", "barrier"]  # zero stalls left out
    assert parsed["kernels"] == ["softmax_kernel"]


def test_hardware_counters_say_when_the_target_is_not_here():
    result = hardware_counters(
        ROOT / "kernels_dataset/problems/softmax.py", ROOT / "kernels_dataset/solutions/softmax_triton.py", "h100"
    )
    assert result["available"] is False and "not on this machine" in result["why"]


def test_the_profiler_collects_counters_once_per_improvement(tmp_path, monkeypatch):
    from loop_fakes import FakeEvaluate, ListPolicy

    asked = []

    def fake_counters(problem_path, solution_path):
        asked.append(solution_path)
        return {"available": True, "tool": "perf stat", "values": {"cpus_utilized": 1.9}}

    opts = OptimizeOptions(problem="relu", target="cpu", beam=1, max_iters=4, patience=5)
    deps_hook = optimize.prepare

    def prepare(*args, **kwargs):
        deps = deps_hook(*args, **kwargs)
        deps.counters = fake_counters
        return deps

    monkeypatch.setattr(optimize, "prepare", prepare)
    result = optimize.run(
        opts,
        policy=ListPolicy(),
        evaluate=FakeEvaluate([1.0, 2.0, 1.5, 2.5]),
        checkpointer=SqliteSaver(sqlite3.connect(tmp_path / "cp.db", check_same_thread=False)),
    )
    assert [p.rsplit("/", 1)[-1] for p in asked] == ["001-0.py", "002-0.py", "004-0.py"]  # not the 1.5x one
    steps = optimize.open_store().steps(result["run_id"])
    critic = [s["payload"] for s in steps if s["agent"] == "critic"]
    assert "1.90 CPUs busy" in critic[1]
