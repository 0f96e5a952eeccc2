"""How far apart the host put the cores the judge times on: the round trip of one cache line between the first
core and each other one, probed before and after each CPU measurement.

A virtual machine's cores are the host's to place. On this project's 2-core development VM (an AMD EPYC Zen 5,
2026-11-28) a convolution whose threads took output blocks first come first served (`schedule(dynamic)`) ran at
two speeds, 0.70 and 1.55 ms a call, in spells of seconds to minutes, while torch's own convolution in the same
process, its FMA rate and each core's cache bandwidth did not move and the guest's counters saw nothing; the
same kernel with each thread writing the same blocks every call (`schedule(static)`) hardly moved either. So a
block last written by the other core is what got slow to fetch. In one such run a cache line's round trip
between the cores (a probe like this one's) was ~214 ns in the fast spells and ~680 ns in the slow ones; in
two other runs slow spells came with no change in it. So a changed round trip shows the host moved the cores, and a steady one does not prove a
steady host (docs/harness.md, "Timing").

The round trip is what the timing records (`details.timing.cores`); a measurement across which it changed by
more than MOVED_RATIO is `moved` and, on a CPU, taken again like a busy host's (session.py).
"""

from __future__ import annotations

import ctypes
import os
import subprocess

# On the idle Zen 5 VM 30 probes in a row ranged 362-411 ns (1.14x), the two placements seen were ~3x apart: a
# change beyond this is the host moving the cores, not the probe's noise.
MOVED_RATIO = 1.6
PER_BATCH, BATCHES, BUDGET_MS = 100, 15, 20.0  # ~1 ms a pair at 700 ns, at most ~20 ms on a busy host
MAX_PAIRS = 8  # from the first core to at most 8 others: a large host is probed in ~10 ms

SOURCE = r"""
#include <algorithm>
#include <atomic>
#include <chrono>
#include <pthread.h>
#include <sched.h>
#include <thread>
#include <vector>

static bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// Nanoseconds of a round trip of one cache line between a thread on cpu `a` and one on cpu `b` (a writes 1, b
// answers 0): the median of up to `batches` batches of `per_batch` round trips, so that a batch in which the
// host took a core away for a while does not count; it stops after `budget_ms` once it has 3 batches. Both
// threads are its own (the caller's affinity is untouched). -1 when a thread could not be pinned.
extern "C" double round_trip_ns(int a, int b, int per_batch, int batches, double budget_ms) {
  alignas(64) static std::atomic<int> line;
  line.store(0);
  std::atomic<bool> stop{false}, failed{false};
  std::vector<double> means;
  std::thread answer([&] {
    if (!pin(b)) {
      failed = stop = true;
      return;
    }
    while (!stop.load(std::memory_order_relaxed))
      if (line.load(std::memory_order_acquire) == 1) line.store(0, std::memory_order_release);
  });
  std::thread ask([&] {
    if (!pin(a)) {
      failed = stop = true;
      return;
    }
    using clock = std::chrono::steady_clock;
    const auto begin = clock::now();
    for (int batch = -1; batch < batches && !stop.load(); ++batch) {  // batch -1: both threads up, the line warm
      const auto start = clock::now();
      for (int i = 0; i < per_batch && !stop.load(std::memory_order_relaxed); ++i) {
        line.store(1, std::memory_order_release);
        while (line.load(std::memory_order_acquire) != 0)
          if (stop.load(std::memory_order_relaxed)) return;
      }
      const auto now = clock::now();
      if (batch >= 0) means.push_back(std::chrono::duration<double, std::nano>(now - start).count() / per_batch);
      if (means.size() >= 3 && std::chrono::duration<double, std::milli>(now - begin).count() > budget_ms) break;
    }
    stop = true;
  });
  ask.join();
  answer.join();
  if (failed || means.empty()) return -1.0;
  std::nth_element(means.begin(), means.begin() + means.size() / 2, means.end());
  return means[means.size() / 2];
}
"""


def _library():
    from agentkern.native import compile_cpp

    lib = compile_cpp(SOURCE, "core_link", extra_flags=("-O2", "-pthread"))
    lib.round_trip_ns.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_double]
    lib.round_trip_ns.restype = ctypes.c_double
    return lib


def probe() -> dict:
    """{"cpus": [first, others...], "round_trip_ns": [one per other cpu]} over the cores this process may run
    on, or {"unavailable": why} (one core, no compiler, no affinity calls)."""
    from agentkern.native import CompileError

    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return {"unavailable": "this host does not say which cores a process runs on"}
    if len(cpus) < 2:
        return {"unavailable": "one core: nothing to be apart from"}
    try:
        lib = _library()
    except (CompileError, OSError, subprocess.SubprocessError) as exc:
        return {"unavailable": f"the probe could not be built: {str(exc)[:120]}"}
    first, others = cpus[0], cpus[1 : 1 + MAX_PAIRS]
    trips = [lib.round_trip_ns(first, other, PER_BATCH, BATCHES, BUDGET_MS) for other in others]
    if any(t <= 0 for t in trips):
        return {"unavailable": "a probe thread could not be pinned to its core"}
    return {"cpus": [first, *others], "round_trip_ns": [round(t, 1) for t in trips]}


def compare(before: dict, after: dict) -> dict:
    """The timing's `cores`: the farthest round trip before and after a measurement, and `moved` where the host
    changed the cores' placement in between (a ratio beyond MOVED_RATIO); {"unavailable": why} without a probe."""
    if "round_trip_ns" not in before or "round_trip_ns" not in after:
        return {"unavailable": before.get("unavailable") or after.get("unavailable") or "not probed"}
    far_before, far_after = max(before["round_trip_ns"]), max(after["round_trip_ns"])
    ratio = max(far_before, far_after) / min(far_before, far_after)
    return {
        "cpus": before["cpus"],
        "round_trip_ns": [far_before, far_after],
        "moved": ratio > MOVED_RATIO,
    }


def note(cores: dict | None) -> str | None:
    """What a reader of the verdict should know of the cores' placement: only that it changed while timed."""
    if not cores or not cores.get("moved"):
        return None
    before, after = cores["round_trip_ns"]
    return (
        f"the host moved this machine's cores while timed (a cache line's round trip between them {before:.0f} ns "
        f"before, {after:.0f} ns after): kernels that share data between cores run at a different speed in each "
        "placement; re-time it"
    )


def line(cores: dict | None) -> str | None:
    """The cores' placement in one line, for the detailed views: None where it was not probed (a GPU's timing)."""
    if not cores:
        return None
    if "unavailable" in cores:
        return f"cores: not probed ({cores['unavailable']})"
    before, after = cores["round_trip_ns"]
    cpus = cores["cpus"]
    return (
        f"cores {cpus[0]} and {', '.join(str(c) for c in cpus[1:])}: a cache line's round trip {before:.0f} ns before "
        f"timing, {after:.0f} ns after" + (" (moved)" if cores.get("moved") else "")
    )
