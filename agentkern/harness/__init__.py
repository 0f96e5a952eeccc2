"""The evaluation harness: decides whether a candidate kernel is correct and how fast it is.

Candidate code never runs in this process: `evaluate.evaluate` checks the files, then hands them to a
sandboxed worker process (see sandbox.py and worker.py) and turns what comes back into an EvalResult.

This package imports nothing: the sandboxed worker imports harness modules too, and must not load the
parent's side (evaluate, sandbox) with them. Import from the submodules: `agentkern.harness.evaluate`
(evaluate, hardware_counters), `agentkern.harness.sandbox` (WarmPool).
"""
