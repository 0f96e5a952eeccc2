"""SQLite run store under AGENTKERN_HOME, with numbered migrations (simonw/llm's approach).

Rows are written as things happen, so a run that is killed loses nothing it had finished. Candidate rows are
keyed by (run_id, candidate_id) and written with INSERT OR REPLACE: a node that LangGraph replays after a
resume rewrites its rows instead of adding them twice.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any

from agentkern.errors import UserError
from agentkern.types import Candidate

MIGRATIONS: list[str] = [
    # 1: the first schema
    """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY, created REAL, problem TEXT, target TEXT, backend TEXT, model TEXT,
        options TEXT, status TEXT, stopped_because TEXT, best_candidate TEXT, finished REAL
    );
    CREATE TABLE steps (
        id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, iteration INTEGER, agent TEXT, key TEXT, ts REAL,
        summary TEXT, payload TEXT, UNIQUE (run_id, iteration, agent, key)
    );
    CREATE TABLE model_calls (
        id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, iteration INTEGER, agent TEXT, ts REAL,
        model TEXT, prompt TEXT, reply TEXT, prompt_tokens INTEGER, completion_tokens INTEGER,
        cost_usd REAL, latency_s REAL, error TEXT, retrieved TEXT
    );
    CREATE TABLE candidates (
        run_id TEXT, candidate_id TEXT, iteration INTEGER, strategy TEXT, params TEXT, parent TEXT,
        path TEXT, status TEXT, correct INTEGER, speedup REAL, kernel_ms REAL, reference_ms REAL,
        roofline_fraction REAL, predicted INTEGER, error TEXT, verdict TEXT, ts REAL,
        PRIMARY KEY (run_id, candidate_id)
    );
    CREATE INDEX steps_run ON steps (run_id, id);
    CREATE INDEX calls_run ON model_calls (run_id, id);
    """,
    # 2: what the harness said about each candidate, as data (agentkern/traces/evidence.py): the source as
    # evaluated (the run folder may be deleted), the build/worker log, the correctness report and the timing.
    """
    ALTER TABLE candidates ADD COLUMN source TEXT;
    ALTER TABLE candidates ADD COLUMN compile_log TEXT;
    ALTER TABLE candidates ADD COLUMN correctness TEXT;
    ALTER TABLE candidates ADD COLUMN timing TEXT;
    """,
    # 3: which process is driving a run ("host:pid:start-ticks"), so a run whose process died without
    # saying so (SIGKILL, OOM, a restart) reads as interrupted instead of running forever.
    """
    ALTER TABLE runs ADD COLUMN owner TEXT;
    """,
    # 4: how each model call was fitted to the model's context window (policies/prompt_budget.py): the
    # window and where it came from, the reply's max_tokens, what was trimmed from the prompt, finish reason.
    """
    ALTER TABLE model_calls ADD COLUMN notes TEXT;
    """,
    # 5: the run's best candidates timed again once the search stopped (loop/nodes/confirm.py), as JSON:
    # the winner and its figures as re-timed, which are the run's result (candidates keep the search's).
    """
    ALTER TABLE runs ADD COLUMN confirmation TEXT;
    """,
]

# Seconds a writer waits for another writer's lock (several runs, or `bench`, share one runs.db).
BUSY_TIMEOUT_S = 30.0


def _json(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True)


def _json_or_null(value: Any) -> str | None:
    return None if value is None else _json(value)


def unreadable(path: Path, exc: sqlite3.DatabaseError) -> UserError:
    """A store SQLite cannot read (a damaged file, or not a database) is bad input, said in one line (exit 2),
    the same for every command that opens it."""
    return UserError(f"{path} is not a readable run store: {exc}")


class RunStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # Autocommit: every write is its own transaction, so a run killed at any point keeps every row it wrote.
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        self.db.row_factory = sqlite3.Row
        try:
            # WAL: readers (agentkern traces) never block the writers, and several runs can write at once.
            self._wal()
            self.db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise unreadable(path, exc) from None

    def _wal(self) -> None:
        """Switch to WAL. On a new file, two processes doing so at once (a bench with --workers 2) can get
        "database is locked" at once, without the busy timeout's wait: try again for as long as that timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                self.db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _migrate(self) -> None:
        self.db.execute("CREATE TABLE IF NOT EXISTS _migrations (number INTEGER PRIMARY KEY, applied REAL)")
        for number, sql in enumerate(MIGRATIONS, start=1):
            if self._applied(number):
                continue
            # Take the write lock first, then look again: another process opening the store at the same
            # moment may have applied this migration while we waited.
            self.db.execute("BEGIN IMMEDIATE")
            try:
                if not self._applied(number):
                    for statement in sql.split(";"):  # DDL only, no ';' inside a statement
                        if statement.strip():
                            self.db.execute(statement)
                    self.db.execute("INSERT INTO _migrations VALUES (?, ?)", (number, time.time()))
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def _applied(self, number: int) -> bool:
        return self.db.execute("SELECT 1 FROM _migrations WHERE number=?", (number,)).fetchone() is not None

    # ---- writes --------------------------------------------------------------------------------------
    def start_run(self, run_id: str, problem: str, target: str, backend: str, model: str, options: dict) -> None:
        self.db.execute(
            "INSERT OR IGNORE INTO runs (run_id, created, problem, target, backend, model, options, status) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 'running')",
            (run_id, time.time(), problem, target, backend, model, _json(options)),
        )

    def claim_run(self, run_id: str) -> None:
        """This process drives the run from now on (a new run, or one resumed)."""
        self.db.execute(
            "UPDATE runs SET status='running', owner=?, finished=NULL WHERE run_id=?", (process_identity(), run_id)
        )

    def interrupt_run(self, run_id: str, why: str) -> None:
        """The run stopped before its stop rule did (Ctrl-C, an error): say so, if it is still running."""
        self.db.execute(
            "UPDATE runs SET status='interrupted', stopped_because=? WHERE run_id=? AND status='running'", (why, run_id)
        )

    def finish_run(
        self, run_id: str, stopped_because: str, best_candidate: str | None, confirmation: dict | None = None
    ) -> None:
        self.db.execute(
            "UPDATE runs SET status='finished', stopped_because=?, best_candidate=?, finished=?, confirmation=? "
            "WHERE run_id=?",
            (
                stopped_because,
                best_candidate,
                time.time(),
                None if confirmation is None else _json(confirmation),
                run_id,
            ),
        )

    def step(
        self, run_id: str, iteration: int, agent: str, summary: str, payload: dict | None = None, key: str = ""
    ) -> None:
        """One agent step. (run, iteration, agent, key) is unique: a node replayed after a resume replaces
        its row instead of adding a second one."""
        self.db.execute(
            "INSERT OR REPLACE INTO steps (run_id, iteration, agent, key, ts, summary, payload) VALUES (?,?,?,?,?,?,?)",
            (run_id, iteration, agent, key, time.time(), summary, _json(payload or {})),
        )

    def model_call(
        self,
        run_id: str,
        iteration: int,
        agent: str,
        model: str,
        prompt: str,
        reply: str | None,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cost_usd: float = 0.0,
        latency_s: float = 0.0,
        error: str | None = None,
        retrieved: list | None = None,
        notes: dict | None = None,
    ) -> None:
        self.db.execute(
            "INSERT INTO model_calls (run_id, iteration, agent, ts, model, prompt, reply, prompt_tokens, "
            "completion_tokens, cost_usd, latency_s, error, retrieved, notes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                iteration,
                agent,
                time.time(),
                model,
                prompt,
                reply,
                prompt_tokens,
                completion_tokens,
                cost_usd,
                latency_s,
                error,
                _json(retrieved or []),
                _json_or_null(notes),
            ),
        )

    def candidate(self, run_id: str, record: Candidate, evidence: dict | None = None) -> None:
        """`evidence`: the harness's report on it (agentkern.traces.evidence.from_verdict): source,
        compile_log, correctness, timing."""
        evidence = evidence or {}
        self.db.execute(
            "INSERT OR REPLACE INTO candidates (run_id, candidate_id, iteration, strategy, params, parent, path, "
            "status, correct, speedup, kernel_ms, reference_ms, roofline_fraction, predicted, error, verdict, ts, "
            "source, compile_log, correctness, timing) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                record["id"],
                record["iteration"],
                record["strategy"],
                _json(record.get("params", {})),
                record.get("parent"),
                record.get("path"),
                record["status"],
                int(bool(record.get("correct"))),
                record.get("speedup"),
                record.get("kernel_ms"),
                record.get("reference_ms"),
                record.get("roofline_fraction"),
                int(bool(record.get("predicted"))),
                record.get("error"),
                _json(record.get("verdict", {})),
                time.time(),
                evidence.get("source"),
                evidence.get("compile_log"),
                _json_or_null(evidence.get("correctness")),
                _json_or_null(evidence.get("timing")),
            ),
        )

    # ---- reads ---------------------------------------------------------------------------------------
    def run(self, run_id: str) -> dict | None:
        row = self.db.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return seen_status(dict(row)) if row else None

    def candidates(self, run_id: str) -> list[dict]:
        rows = self.db.execute("SELECT * FROM candidates WHERE run_id=? ORDER BY iteration, candidate_id", (run_id,))
        return [dict(r) for r in rows]

    def steps(self, run_id: str) -> list[dict]:
        return [dict(r) for r in self.db.execute("SELECT * FROM steps WHERE run_id=? ORDER BY id", (run_id,))]

    def model_calls(self, run_id: str) -> list[dict]:
        return [dict(r) for r in self.db.execute("SELECT * FROM model_calls WHERE run_id=? ORDER BY id", (run_id,))]

    def close(self) -> None:
        self.db.close()


# ---- is the process driving a run still there? ---------------------------------------------------------
def _start_ticks(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, /proc/PID/stat field 22), or None if it is gone.
    With the pid, it names one process: a pid reused later has another start time."""
    if not os.path.exists("/proc/self/stat"):  # no /proc (macOS): the pid alone
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return "?"
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except FileNotFoundError:
        return None
    except (OSError, IndexError):
        return "?"


def process_identity(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_start_ticks(pid)}"


def owner_alive(owner: str | None) -> bool | None:
    """True or False for a process on this host; None when it cannot be told (another host, no owner
    recorded: a run started before migration 3)."""
    if not owner:
        return None
    try:
        host, pid, ticks = owner.rsplit(":", 2)
        pid = int(pid)
    except ValueError:
        return None
    if host != socket.gethostname():
        return None
    now = _start_ticks(pid)
    return now is not None and (ticks == "?" or now == "?" or now == ticks)


def seen_status(row: dict) -> dict:
    """A run row as a reader should see it: `running` whose process is gone on this host is `interrupted`
    (killed without a chance to say so). The stored row is left as it is; --resume claims it again."""
    if row.get("status") == "running" and owner_alive(row.get("owner")) is False:
        row["status"] = "interrupted"
        row["stopped_because"] = row.get("stopped_because") or "its process is gone (killed?)"
    return row


def winner_row(confirmation: dict) -> dict | None:
    """The confirmation's row of its winner (loop/nodes/confirm.py), None when no contender held up."""
    return next((r for r in confirmation.get("rows", []) if r.get("candidate") == confirmation.get("winner")), None)


def confirmed_speedup(run: dict) -> float | None:
    """The run's winner's speedup as timed again (runs.confirmation), None when it was not confirmed."""
    raw = run.get("confirmation")
    if not raw:
        return None
    row = winner_row(json.loads(raw) if isinstance(raw, str) else raw)
    return row.get("speedup") if row else None
