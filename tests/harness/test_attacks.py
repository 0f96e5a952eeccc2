"""Attacks on the judge (issue 14): every kernel in tests/harness/attacks must be defeated.

Each file is a cheat against one class of the threat model (forging the verdict, patching the judge
in-process, knowing the inputs, slowing the reference, torch/BLAS fallbacks, escaping the sandbox). Its
header says what defeating it means:
- `# expect: defeated`: the verdict is not ok and carries no speedup;
- `# expect: no-advantage`: the verdict may be ok (the kernel computes honestly), but the reference's time
  beside it stays below 1.5 times the reference's time beside an honest kernel of its kind, evaluated in the
  same test (HONEST): these attacks go for the reference's time;
- `# leaves-no-trace: process NAME` / `# leaves-no-trace: file HOME/...` (HOME, AGENTKERN_HOME): after the
  evaluation no such process runs and no such file exists;
- `# max-wall-s: N`: the evaluation comes back within N seconds (every wait bounded by the judge).
Whatever the attack, agentkern itself must come back with a verdict: it is run in a child process (an
attack may stop or kill its parent), under a private HOME and AGENTKERN_HOME (an attack may write or lock
what is there).
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import ROOT, read_expectation

ATTACKS = sorted((ROOT / "tests" / "harness" / "attacks").glob("*.py"))
CLASSES = ("forge_", "patch_", "knows_", "slow_ref_", "fallback_", "escape_")
EVAL_TIMEOUT_S = 150  # far beyond what the limits below allow an honest evaluation, on a busy 2-core host
NO_ADVANTAGE_SPEEDUP = 1.5  # times the reference's time beside an honest kernel of its kind, in the same test
# The honest kernel an attack that computes honestly is compared with (its speedup is the host's, not a constant).
HONEST = {"relu": ROOT / "kernels_dataset" / "solutions" / "relu_cpp.py"}
RESULT_PREFIX = "attack-test-verdict: "  # not "agentkern-attack-": the cleanup kills those

# Runs in a fresh interpreter: agentkern's process, which an attack may signal.
_CHILD = f"""
import json, sys
sys.path.insert(0, {str(ROOT / "tests")!r})
from support import fast_options
from agentkern.harness.evaluate import evaluate
problem, path, timing = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
r = evaluate(problem, path, "cpu", fast_options(run_timeout_s=8, compile_timeout_s=20, memory_limit_gb=3, **timing))
print({RESULT_PREFIX!r} + json.dumps({{
    "status": r.status, "correct": r.correct, "speedup": r.speedup, "error": r.error, "reference_ms": r.reference_ms,
    "rejected_because": r.details.get("rejected_because"), "workdir": r.details.get("workdir"),
}}), flush=True)
"""


def _headers(path: Path) -> tuple[str, str, list[tuple[str, str]], float | None]:
    problem, expect, _ = read_expectation(path)
    text = path.read_text()
    traces = re.findall(r"^# leaves-no-trace:\s*(process|file)\s+(\S+)", text, re.M)
    wall = re.search(r"^# max-wall-s:\s*([0-9.]+)", text, re.M)
    return problem, expect, traces, float(wall.group(1)) if wall else None


def _processes_named(name: str) -> list[int]:
    """Processes whose command line contains `name`, or whose comm is its first 15 characters."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
        except OSError:
            continue
        if name in cmdline or comm == name[:15]:
            found.append(int(entry))
    return found


def _kill(pids: list[int]) -> None:
    for pid in pids:
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except OSError:
                pass


# A speedup is judged on enough timed blocks (5-16 of ~20 ms) that one stalled block on a busy 2-core host does
# not decide it: with 3 blocks (48 calls) the median moved 0.28-0.43 ms for the same reference.
STEADY_TIMING = {"time_budget_s": 1.0, "min_timed_calls": 24, "max_timed_calls": 200}


def _run_agentkern(problem: str, path: Path, env: dict, timing: dict) -> tuple[dict | None, str, float]:
    """(the verdict or None, what went wrong with agentkern itself, wall seconds)."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, problem, str(path), json.dumps(timing)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=EVAL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        stopped = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except OSError:
                pass
        proc.communicate()
        why = "was stopped (SIGSTOP)" if stopped else "hung"
        return None, f"agentkern {why}: no verdict within {EVAL_TIMEOUT_S} s", time.monotonic() - started
    wall = time.monotonic() - started
    for line in out.decode(errors="replace").splitlines():
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :]), "", wall
    code = proc.returncode
    how = f"was killed by signal {-code}" if code < 0 else f"exited {code}"
    return None, f"agentkern {how} without a verdict: {err.decode(errors='replace')[-400:]!r}", wall


def test_every_attack_class_has_attacks():
    assert len(ATTACKS) >= 20
    for prefix in CLASSES:
        assert any(p.name.startswith(prefix) for p in ATTACKS), prefix


@pytest.mark.parametrize("path", ATTACKS, ids=lambda p: p.stem)
def test_attack_file_is_well_formed(path):
    text = path.read_text()
    tree = compile(text, str(path), "exec", flags=0x400, dont_inherit=True)  # ast.PyCF_ONLY_AST
    assert tree.body and isinstance(tree.body[0].value.value, str), "starts with a docstring"
    assert "class ModelNew(nn.Module)" in text
    problem, expect, _, _ = _headers(path)
    assert expect in ("defeated", "no-advantage")
    assert (ROOT / "kernels_dataset" / "problems" / f"{problem}.py").exists()


def _advantage(problem: str, path: Path, result: dict, env: dict, timing: dict) -> str | None:
    """What an attack that computes honestly gained over an honest kernel evaluated beside it, or None."""
    if result["status"] != "ok":
        return None
    honest, _, _ = _run_agentkern(problem, HONEST[problem], env, timing)
    if path.name.startswith("slow_ref_"):
        # What these attacks go for is the reference's time: compare it with the reference's time beside an
        # honest kernel of the same kind (the kernels' own speeds may differ). A slower reference is an
        # advantage only when the attack's speedup gained from it: one that slows the whole machine (its
        # spinners starving the host, as seen in two CI runs: reference 0.41 ms against 0.24-0.27, but a
        # speedup of 0.25-0.34 against the honest kernel's ~1) slows its own kernel more and gains nothing.
        limit = NO_ADVANTAGE_SPEEDUP * ((honest or {}).get("reference_ms") or float("inf"))
        gained = (result["speedup"] or 0) > ((honest or {}).get("speedup") or 0)
        if not (result["reference_ms"] or 0) < limit and gained:
            return (
                f"the reference took {result['reference_ms']:.3g} ms beside it, over 1.5x its "
                f"{honest['reference_ms']:.3g} ms beside an honest kernel, and its speedup "
                f"{result['speedup']:.3g} beat the honest kernel's {honest['speedup']:.3g}: {result}"
            )
        return None
    # An attack on the inputs (a cache) goes for its own time instead: its speedup against the honest one's.
    fastest_honest = NO_ADVANTAGE_SPEEDUP * max((honest or {}).get("speedup") or 1.0, 1.0)
    if not (result["speedup"] or 0) < fastest_honest:
        return f"speedup {result['speedup']:.3g} >= {fastest_honest:.3g}: {result}"
    return None


@pytest.mark.parametrize("path", ATTACKS, ids=lambda p: p.stem)
def test_attack_is_defeated(path, tmp_path, monkeypatch):
    problem, expect, traces, max_wall = _headers(path)
    home, agentkern_home = tmp_path / "home", tmp_path / "agentkern-home"
    home.mkdir()
    agentkern_home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AGENTKERN_HOME", str(agentkern_home))
    monkeypatch.delenv("AGENTKERN_LOCK_DIR", raising=False)
    failures = []
    try:
        # The worker imports agentkern too: from this checkout, not whatever the venv has installed.
        pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        timing = STEADY_TIMING if expect == "no-advantage" else {}
        result, broken, wall = _run_agentkern(problem, path, {**os.environ, "PYTHONPATH": pythonpath}, timing)
        print(f"{path.name}: {result or broken} ({wall:.1f} s)")  # shown with -rA: what each attack got
        # agentkern itself must survive every attack and come back with a verdict.
        if result is None:
            failures.append(broken)
        elif expect == "defeated":
            if result["status"] == "ok" or result["speedup"] is not None:
                failures.append(f"got through: {result}")
        elif expect == "no-advantage" and result["status"] == "ok":
            env = {**os.environ, "PYTHONPATH": pythonpath}
            advantage = _advantage(problem, path, result, env, timing)
            if advantage is not None:  # timings on this VM stall now and then: an attack gains every time
                again, _, _ = _run_agentkern(problem, path, env, timing)
                second = _advantage(problem, path, again, env, timing) if again else "no verdict the second time"
                if second is not None:
                    failures.append(f"{advantage}; and again: {second}")
        if max_wall is not None and wall > max_wall:
            failures.append(f"the evaluation took {wall:.0f} s, more than {max_wall:.0f} s")
        time.sleep(0.5)  # a double-forked child may still be on its way to exec
        roots = {"HOME": home, "AGENTKERN_HOME": agentkern_home}
        for kind, what in traces:
            if kind == "process":
                pids = _processes_named(what)
                if pids:
                    failures.append(f"process {what} survived the evaluation: pids {pids}")
            else:
                root, _, rest = what.partition("/")
                target = roots[root] / rest
                if target.exists():
                    failures.append(f"the attack wrote {target}")
    finally:
        _kill(_processes_named("agentkern-attack-"))
    known_open = re.search(r"^# known-open:\s*(.+)$", path.read_text(), re.M)
    if failures and known_open:  # an open hole, named in docs/harness.md: reported on every run, not hidden
        pytest.skip(f"{path.name}: KNOWN OPEN ({known_open.group(1)}): " + "; ".join(failures))
    assert not failures, f"{path.name}: " + "; ".join(failures)
