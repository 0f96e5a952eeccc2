"""How busy the host was with other work while the judge timed: the CPU time of everything outside the judge's
own process tree, and the time a virtual machine's hypervisor took (steal), as shares of all the cores' time.

agentkern's own evaluations never overlap a measurement (device_lock.py), but nothing stops another program
from running beside one: a test suite, a build, a second agentkern with another lock folder, a noisy neighbour
on a shared CI runner. A kernel timed then is slower than it is, the reference too, by different amounts, and
the verdict is the machine's, not the kernel's. The judge watches each measurement (`watch`) and the session
times again when the host was `disturbed` (session.py), keeping the quietest attempt and saying how busy it was.

What counts as the judge's own: the judge process and every process under it (both runners, whatever a
candidate starts inside its sandbox), including the children they reaped (cutime, cstime): a candidate cannot
make its own work look like another program's. Kernel threads working for nobody in that tree count as
others. Figures come from /proc (Linux); elsewhere the watch says it is unavailable and nothing is re-timed.
"""

from __future__ import annotations

import contextlib
import os
import time

# Others' CPU time plus steal, as a share of all the cores' time while timed, above which a measurement is taken
# again: on this project's idle 2-core VM a measurement saw 1-2 % (a 2-worker bench: 1-8 %, its own process among
# them), with one busy loop beside it 45-47 % (docs/harness.md, "A busy host").
DISTURBED_SHARE = 0.10
# Between measurements on a busy host (EvalOptions.busy_host_attempts) the judge waits a little, longer each time:
# a build beside it may finish.
WAIT_BETWEEN_S = (1.0, 3.0)


def _system_jiffies() -> tuple[int, int, int] | None:
    """(busy, steal, total) clock ticks of all CPUs since boot, from /proc/stat's first line; None off Linux."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    busy = user + nice + system + irq + softirq  # guest time is inside user already
    return busy, steal, busy + idle + iowait + steal


def _process_jiffies(pid: int) -> int:
    """utime + stime + cutime + cstime of one process (its threads and the children it reaped), 0 if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            after_name = f.read().rsplit(b")", 1)[1].split()
        return sum(int(v) for v in after_name[11:15])
    except (OSError, IndexError, ValueError):
        return 0


def children(pid: int) -> list[int]:
    """The pids of `pid`'s child processes (every thread's), [] once it is gone."""
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        pass
    return found


def tree_pids(root: int) -> set[int]:
    """`root` and every process under it."""
    todo, seen = [root], set()
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo += children(pid)
    return seen


def tree_jiffies(root: int) -> int:
    """CPU clock ticks of `root` and every process under it."""
    return sum(_process_jiffies(pid) for pid in tree_pids(root))


def _processes() -> dict[int, tuple[str, int]]:
    """Every process this judge can see: pid -> (its command name, its own CPU clock ticks: not its reaped
    children's, which would charge a parent with a whole child's life when it reaps it inside the window)."""
    found = {}
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return found
    for name in entries:
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                head, _, rest = f.read().rpartition(b")")
            found[int(name)] = (
                head.split(b"(", 1)[1].decode(errors="replace"),
                sum(int(v) for v in rest.split()[11:13]),
            )
        except (OSError, IndexError, ValueError):
            continue
    return found


def _top_others(before: dict, after: dict, own: set[int], total: int, top: int = 3) -> list[dict]:
    """The busiest processes outside the judge's tree over the window, as shares of all the cores' time: a hint
    of who the load was (a process that started and ended inside the window is not seen)."""
    grown = []
    for pid, (name, ticks) in after.items():
        if pid in own:
            continue
        delta = ticks - before[pid][1] if pid in before else ticks  # one that started in the window: all of it
        if delta > 0 and delta / total >= 0.01:
            grown.append({"name": name, "pid": pid, "share": round(delta / total, 4)})
    return sorted(grown, key=lambda p: -p["share"])[:top]


class Watch:
    """The host's load over one measurement: `result()` once the block has ended."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.processes_start = _processes()
        self.start = _system_jiffies()
        self.own_start = tree_jiffies(root) if self.start else 0
        self.wall_start = time.perf_counter()
        self.end: tuple[int, int, int] | None = None
        self.own_end = 0
        self.wall_s = 0.0
        self.top_others: list[dict] = []

    def stop(self) -> None:
        self.wall_s = time.perf_counter() - self.wall_start
        self.own_end = tree_jiffies(self.root) if self.start else 0
        self.end = _system_jiffies()
        if self.start and self.end and self.end[2] > self.start[2]:
            total = self.end[2] - self.start[2]
            self.top_others = _top_others(self.processes_start, _processes(), tree_pids(self.root), total)

    def result(self) -> dict:
        """{"others_share", "steal_share", "busy_share", "disturbed", "top_others", "wall_s"}, or {"unavailable": why}."""
        if self.start is None or self.end is None:
            return {"unavailable": "no /proc/stat on this host"}
        busy, steal, total = (b - a for a, b in zip(self.start, self.end))
        if total <= 0:
            return {"unavailable": "the measurement was shorter than one clock tick"}
        others = max(0, busy - (self.own_end - self.own_start)) / total
        stolen = max(0, steal) / total
        return {
            "others_share": round(others, 4),
            "steal_share": round(stolen, 4),
            "busy_share": round(others + stolen, 4),
            "disturbed": others + stolen > DISTURBED_SHARE,
            "top_others": self.top_others,
            "wall_s": round(self.wall_s, 3),
        }


@contextlib.contextmanager
def watch(root: int | None = None):
    """Watch the host while the block runs (`root`: the judge, whose process tree is its own work)."""
    w = Watch(os.getpid() if root is None else root)
    try:
        yield w
    finally:
        w.stop()


def summary(attempts: list[dict], kept: int) -> dict:
    """The timing's `host_load`: the kept attempt's figures, and every attempt's busy share when there were several."""
    kept_load = dict(attempts[kept])
    if len(attempts) > 1:
        kept_load["attempts"] = [a.get("busy_share") for a in attempts]
        kept_load["kept_attempt"] = kept + 1
    return kept_load


def note(load: dict | None) -> str | None:
    """What a reader of the verdict should know of the host's load, or None for a quiet host: a timing still
    disturbed after its attempts ("busy host: ..."), or one taken again before the host was quiet."""
    if not load or "busy_share" not in load:
        return None
    shares = load.get("attempts") or [load["busy_share"]]
    tried = ", ".join(f"{share:.0%}" for share in shares)
    if load.get("disturbed"):
        return (
            f"busy host: other programs took {load['others_share']:.0%} of the CPUs"
            + (f" ({who(load)})" if who(load) else "")
            + (f" and the hypervisor {load['steal_share']:.0%}" if load.get("steal_share") else "")
            + f" while timed ({len(shares)} measurement{'s' if len(shares) > 1 else ''}, busy {tried}; taken again above "
            f"{DISTURBED_SHARE:.0%}): the times are the machine's as much as the kernel's; re-time it on a quiet machine"
        )
    if len(shares) > 1:
        return f"timed again: the host was busy (others' share of the CPUs {tried}); the quiet measurement #{load['kept_attempt']} is the one kept"
    return None


def who(load: dict) -> str:
    """ "g++ 31%, python3 12%": the busiest other processes of a load, "" when none was seen."""
    return ", ".join(f"{p['name']} {p['share']:.0%}" for p in load.get("top_others") or [])


def line(load: dict | None) -> str | None:
    """The host's load in one line, for the detailed views: None where it was not watched."""
    if not load:
        return None
    if "unavailable" in load:
        return f"host load: not watched ({load['unavailable']})"
    return (
        f"host load while timed: others {load['others_share']:.1%}, hypervisor {load['steal_share']:.1%} of the CPUs"
        + (f" ({who(load)})" if who(load) else "")
        + (f" (attempts {', '.join(f'{x:.0%}' for x in load['attempts'])})" if load.get("attempts") else "")
    )
