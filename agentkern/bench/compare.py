"""`--compare PREVIOUS.json`: what broke, what got slower, what improved, and whether CI should fail.

Problems are matched by name. Speedups are compared under the current report's baseline (eager or
torch.compile), as ratios, so two runs on machines of the same kind compare even if their absolute times
differ. A regression, which makes `agentkern bench` exit 1:
- broke: correct before (status ok), not now;
- slower: both correct, and the speedup fell by more than the threshold (relative, default 10%).
Reported, never failing: improved (rose by more than the threshold), fixed (not correct before, correct
now), new (not in the previous report), missing (in the previous report, not run now: --limit, a renamed
file). A speedup that is predicted in either report is compared too, and marked so. Two reports measured on different
machines (their `measured_on`) are compared all the same, with a note that says so.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentkern.errors import UserError

REGRESSIONS = ("broke", "slower")


def load_report(path: str | Path) -> dict:
    try:
        report = json.loads(Path(path).expanduser().read_text())
    except FileNotFoundError:
        raise UserError(f"--compare: no such file {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"--compare: cannot read {path} as a bench report: {exc}") from None
    if not isinstance(report, dict) or not isinstance(report.get("problems"), list):
        raise UserError(f"--compare: {path} is not an agentkern bench report (no 'problems' list)")
    return report


def _speedup(row: dict, baseline: str):
    return row.get(f"speedup_{baseline}") if row.get("status") == "ok" else None


def compare(previous: dict, current: dict, threshold: float = 0.10) -> dict:
    """{"regressed": bool, "threshold", "baseline", "changes": [{name, kind, before, after, change, message}]}"""
    baseline = (current.get("options") or {}).get("baseline", "eager")
    before = {r["name"]: r for r in previous.get("problems", []) if isinstance(r, dict) and "name" in r}
    changes = []
    for row in current.get("problems", []):
        name = row["name"]
        old = before.pop(name, None)
        if old is None:
            changes.append(_change(name, "new", None, _speedup(row, baseline), f"{name}: new ({row['status']})"))
            continue
        change = _row_change(name, old, row, baseline, threshold)
        if change is not None:
            changes.append(change)
    for name, old in before.items():
        changes.append(
            _change(
                name,
                "missing",
                _speedup(old, baseline),
                None,
                f"{name}: missing from this run (was {old.get('status')})",
            )
        )
    regressed = any(c["kind"] in REGRESSIONS for c in changes)
    hosts = (previous.get("measured_on"), current.get("measured_on"))
    return {
        "regressed": regressed,
        "threshold": threshold,
        "baseline": baseline,
        "changes": changes,
        # Said, never failing: ratios from two machines still compare, but less closely (a report from before
        # reports named their machine has None)
        "other_machine": None if None in hosts or hosts[0] == hosts[1] else {"before": hosts[0], "after": hosts[1]},
        "geomean_before": (previous.get("metrics") or {}).get("geomean_speedup"),
        "geomean_after": (current.get("metrics") or {}).get("geomean_speedup"),
    }


def _row_change(name: str, old: dict, row: dict, baseline: str, threshold: float) -> dict | None:
    """How one problem changed between the reports: broke, fixed, slower, improved, or None (within threshold)."""
    s_old, s_new = _speedup(old, baseline), _speedup(row, baseline)
    was_ok, is_ok = old.get("status") == "ok", row.get("status") == "ok"
    mark = " (predicted)" if old.get("predicted") or row.get("predicted") else ""
    if was_ok and not is_ok:
        why = f": {row['reason']}" if row.get("reason") else ""
        return _change(name, "broke", s_old, None, f"{name}: BROKE, was {_x(s_old)}, now {row['status']}{why}")
    if not was_ok and is_ok:
        return _change(name, "fixed", None, s_new, f"{name}: fixed, now {_x(s_new)}{mark}")
    if not (was_ok and s_old and s_new is not None):
        return None
    change = s_new / s_old - 1.0
    if change < -threshold:
        message = f"{name}: SLOWER {_x(s_old)} -> {_x(s_new)} ({change:+.0%}){mark}"
        return _change(name, "slower", s_old, s_new, message, change)
    if change > threshold:
        message = f"{name}: improved {_x(s_old)} -> {_x(s_new)} ({change:+.0%}){mark}"
        return _change(name, "improved", s_old, s_new, message, change)
    return None


def _change(name, kind, before, after, message, change=None) -> dict:
    return {"name": name, "kind": kind, "before": before, "after": after, "change": change, "message": message}


def _x(value) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def summary_lines(result: dict) -> list[str]:
    """What a CI log shows: regressions first, then the rest, then one verdict line."""
    order = {"broke": 0, "slower": 1, "missing": 2, "fixed": 3, "improved": 4, "new": 5}
    lines = [c["message"] for c in sorted(result["changes"], key=lambda c: order[c["kind"]])]
    if result.get("other_machine"):
        hosts = result["other_machine"]
        lines.append(f"note: measured on another machine: before {hosts['before']}; now {hosts['after']}")
    n = sum(1 for c in result["changes"] if c["kind"] in REGRESSIONS)
    geo = f"; geomean {_x(result['geomean_before'])} -> {_x(result['geomean_after'])}"
    if result["regressed"]:
        lines.append(f"compare: {n} regression(s) past the {result['threshold']:.0%} threshold{geo}")
    else:
        lines.append(f"compare: no regression past the {result['threshold']:.0%} threshold{geo}")
    return lines
