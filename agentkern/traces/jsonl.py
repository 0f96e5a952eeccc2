"""`traces export --format jsonl`: one JSON line per model call, with the prompt, the completion and a reward
from a real machine, ready for an RL or fine-tuning trainer.

The reward follows online RL with rewards measured on hardware: a correct kernel earns its speedup over the
reference, a failure (no code, build error, wrong answer, timeout, rejected) earns FAILURE_REWARD, and a
`suspicious` kernel (outputs matched, but faster than the roofline allows) earns SUSPICIOUS_REWARD: no reward
for a time that cannot be believed, no penalty for what may be a measurement's fault. A planner
call earns the best reward of the candidates written from its plan. Runs of the built-in policy make no model
calls: each of their candidates becomes a record whose prompt is built from the problem and the planner's step.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentkern.traces.templating import render
from agentkern.traces.trace import RunTrace, source_of
from agentkern.types import StoredCandidate

FAILURE_REWARD = -1.0
UNTIMED_REWARD = 0.0  # correct, but no speedup could be measured or predicted here
SUSPICIOUS_REWARD = 0.0  # outputs matched, but its time beats the roofline bound (harness/roofline_check.py)


def reward(candidate: StoredCandidate | None) -> tuple[float, str]:
    """(reward, what it is): measured_speedup | predicted_speedup | correct_untimed | suspicious | failure."""
    if candidate is not None and candidate["correct"]:
        if candidate.get("speedup") is not None:
            return float(candidate["speedup"]), "predicted_speedup" if candidate.get(
                "predicted"
            ) else "measured_speedup"
        return UNTIMED_REWARD, "correct_untimed"
    if candidate is not None and candidate.get("status") == "suspicious":
        return SUSPICIOUS_REWARD, "suspicious"
    return FAILURE_REWARD, "failure"


def records(trace: RunTrace) -> list[dict]:
    return model_call_records(trace) if trace.calls else builtin_records(trace)


def model_call_records(trace: RunTrace) -> list[dict]:
    """A record per model call that got a reply and whose outcome is known. Left out: failed calls (no
    completion), and coder calls a resumed run made again (only the second round became candidates)."""
    out = []
    for it in trace.iterations():
        made = {call["id"]: cand for call, cand in zip(trace.coder_calls(it.number), it.candidates)}
        best = max((reward(c) for c in it.candidates), default=None)
        for call in (c for c in trace.calls if c["iteration"] == it.number and c["reply"] is not None):
            if call["agent"] == "coder" and call["id"] in made:
                cand = made[call["id"]]
                value, kind = reward(cand)
            elif call["agent"] == "planner" and best is not None:
                cand, (value, kind) = None, (best[0], f"iteration_best ({best[1]})")
            else:
                continue
            out.append(
                _record(
                    trace,
                    it.number,
                    call["agent"],
                    cand,
                    call["prompt"],
                    call["reply"],
                    value,
                    kind,
                    origin="model_call",
                    model=call["model"],
                    prompt_tokens=call["prompt_tokens"],
                    completion_tokens=call["completion_tokens"],
                )
            )
    return out


def builtin_records(trace: RunTrace) -> list[dict]:
    """A record per candidate with code: prompt = the problem and the planner's step, completion = the code."""
    problem = Path(trace.run["problem"] or "")
    problem_source = problem.read_text() if problem.is_file() else ""
    plans = {s.row["iteration"]: s for s in trace.steps if s.agent == "planner"}
    out = []
    for cand in trace.candidates:
        code = source_of(cand)
        if not code:
            continue
        plan = plans.get(cand["iteration"])
        prompt = render(
            "export/builtin_prompt.md.j2",
            problem=problem_source,
            run=trace.run,
            candidate=cand,
            plan=plan.row["summary"] if plan else "",
            params=json.dumps(cand.get("params") or {}),
        )
        value, kind = reward(cand)
        out.append(
            _record(
                trace,
                cand["iteration"],
                "coder",
                cand,
                prompt,
                code,
                value,
                kind,
                origin="builtin_candidate",
                model=trace.run["model"],
                prompt_tokens=0,
                completion_tokens=0,
            )
        )
    return out


def _record(
    trace: RunTrace,
    iteration: int,
    agent: str,
    cand: StoredCandidate | None,
    prompt: str,
    completion: str,
    value: float,
    kind: str,
    **extra,
) -> dict:
    return {
        "run_id": trace.run_id,
        "problem": trace.problem_name,
        "target": trace.run["target"],
        "backend": trace.run["backend"],
        "iteration": iteration,
        "agent": agent,
        "candidate_id": cand["id"] if cand else None,
        "strategy": cand["strategy"] if cand else None,
        "prompt": prompt,
        "completion": completion,
        # The same exchange as chat messages, the shape most trainers take.
        "messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": completion}],
        "reward": value,
        "reward_kind": kind,
        "status": cand["status"] if cand else None,
        "correct": cand["correct"] if cand else None,
        "speedup": cand["speedup"] if cand else None,
        "predicted": cand["predicted"] if cand else None,
        **extra,
    }


def write(trace: RunTrace, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{trace.run_id}.jsonl"
    with path.open("w") as f:
        for record in records(trace):
            f.write(json.dumps(record, sort_keys=True) + "\n")
    return [path]
