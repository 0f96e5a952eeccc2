"""One run read back from the run store, shaped the way people read it: iterations of agent steps, each step
with the model calls and candidates it produced. Every view and export starts here; nothing here prints.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from agentkern import candidates as population
from agentkern.errors import UserError
from agentkern.traces.store import RunStore, unreadable
from agentkern.types import StoredCandidate

# The order of the nodes in an iteration (agentkern/loop/graph.py). A node replayed after a resume rewrites its
# row with a new id, so ordering by id alone could put a replayed planner after the critic.
AGENT_ORDER = {"planner": 0, "coder": 1, "compiler": 2, "profiler": 3, "critic": 4, "confirm": 5}
JSON_CANDIDATE_FIELDS = ("params", "verdict", "correctness", "timing")


def open_store(path: Path) -> RunStore:
    """The run store for reading: a missing file or one that is not a run store is bad input (UserError),
    not a crash, and opening never creates a store."""
    if not path.is_file():
        raise UserError(f"no run store at {path} (run `agentkern optimize` first, or point --db at one)")
    try:
        # Look before opening for real: RunStore applies migrations, which must never touch a database
        # that is not a run store.
        probe = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            has_runs = probe.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='runs'").fetchone()
        finally:
            probe.close()
        if not has_runs:
            raise UserError(f"{path} is not a run store (it has no runs table)")
        return RunStore(path)
    except sqlite3.DatabaseError as exc:
        raise unreadable(path, exc) from None


@dataclass
class Step:
    number: int  # 1-based position in the run, as `traces show --step N` takes it
    row: dict
    calls: list[dict] = field(default_factory=list)  # the model calls this step made (planner, coder)
    candidate: StoredCandidate | None = None  # the candidate a compiler or profiler step is about

    @property
    def agent(self) -> str:
        return self.row["agent"]

    @property
    def payload(self) -> dict:
        return self.row["payload"] or {}


@dataclass
class Iteration:
    number: int
    steps: list[Step]
    candidates: list[StoredCandidate]


@dataclass
class RunTrace:
    run: dict
    steps: list[Step]
    calls: list[dict]
    candidates: list[StoredCandidate]

    @property
    def run_id(self) -> str:
        return self.run["run_id"]

    @property
    def problem_name(self) -> str:
        return Path(self.run["problem"] or "kernel").stem

    def candidate(self, candidate_id: str | None) -> StoredCandidate | None:
        return next((c for c in self.candidates if c["id"] == candidate_id), None)

    @property
    def best(self) -> StoredCandidate | None:
        """The run's recorded best; for a run that never finished, the fastest correct candidate so far."""
        return self.candidate(self.run.get("best_candidate")) or population.best(self.candidates)

    def iterations(self) -> list[Iteration]:
        numbers = sorted({s.row["iteration"] for s in self.steps} | {c["iteration"] for c in self.candidates})
        return [
            Iteration(
                n,
                [s for s in self.steps if s.row["iteration"] == n],
                [c for c in self.candidates if c["iteration"] == n],
            )
            for n in numbers
        ]

    def step(self, number: int) -> Step:
        if not 1 <= number <= len(self.steps):
            raise UserError(f"run {self.run_id} has steps 1 to {len(self.steps)}, not {number}")
        return self.steps[number - 1]

    def coder_calls(self, iteration: int) -> list[dict]:
        """The coder calls of an iteration that produced its candidates, in candidate order: the last ones
        (a coder node replayed after a resume asked again; only its second round made the candidates)."""
        calls = [c for c in self.calls if c["iteration"] == iteration and c["agent"] == "coder"]
        made = len([c for c in self.candidates if c["iteration"] == iteration])
        if calls and all("branch" in (c.get("notes") or {}) for c in calls):
            # Each call names its draft: the last call of each (a context-length refusal asks twice for one draft)
            last = {c["notes"]["branch"]: c for c in calls}
            return [last[b] for b in sorted(last)][-made:] if made else []
        return calls[-made:] if made else []


def load(store: RunStore, run_id: str) -> RunTrace:
    run = store.run(run_id)
    if run is None:
        raise UserError(f"no run {run_id!r} in {store.path} (`agentkern traces list` shows the runs)")
    run["options"] = _loads(run.get("options")) or {}
    candidates = sorted((_candidate(row) for row in store.candidates(run_id)), key=_candidate_order)
    calls = [
        {**row, "retrieved": _loads(row.get("retrieved")) or [], "notes": _loads(row.get("notes")) or {}}
        for row in store.model_calls(run_id)
    ]
    rows = [{**row, "payload": _loads(row.get("payload"))} for row in store.steps(run_id)]
    rows.sort(key=lambda r: (r["iteration"], AGENT_ORDER.get(r["agent"], 9), r["id"]))
    steps = []
    for number, row in enumerate(rows, start=1):
        step = Step(number, row)
        if row["agent"] in ("planner", "coder"):
            step.calls = [c for c in calls if c["iteration"] == row["iteration"] and c["agent"] == row["agent"]]
        elif row["agent"] in ("compiler", "profiler"):
            wanted = (row["payload"] or {}).get("candidate")
            step.candidate = next((c for c in candidates if c["id"] == wanted), None)
        steps.append(step)
    return RunTrace(run, steps, calls, candidates)


def source_of(candidate: StoredCandidate | None) -> str | None:
    """The candidate's code: as stored with it (migration 2), else from its file while the run folder exists."""
    if candidate is None:
        return None
    if candidate.get("source"):
        return candidate["source"]
    try:
        return Path(candidate["path"]).read_text() if candidate.get("path") else None
    except OSError:
        return None


def _candidate_order(candidate: StoredCandidate) -> tuple:
    """Ids are ITERATION-INDEX ("001-10"): order by the numbers, so the 10th draft comes after the 2nd."""
    index = candidate["id"].rsplit("-", 1)[-1]
    return candidate["iteration"], int(index) if index.isdigit() else 0, candidate["id"]


def _candidate(row: dict) -> StoredCandidate:
    out = {**row, "id": row["candidate_id"], "correct": bool(row["correct"]), "predicted": bool(row["predicted"])}
    for key in JSON_CANDIDATE_FIELDS:
        out[key] = _loads(row.get(key))
    return out


def _loads(text: str | None):
    if text is None or text == "":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text  # written by something else: show it as it is
