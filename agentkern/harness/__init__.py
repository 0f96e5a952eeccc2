"""The evaluation harness: decides whether a candidate kernel is correct and how fast it is.

Candidate code never runs in this process: `evaluate` checks the files, then hands them to a sandboxed
worker process (see sandbox.py and worker.py) and turns what comes back into an EvalResult.
"""

from agentkern.harness.evaluate import evaluate, hardware_counters
from agentkern.harness.sandbox import WarmPool

__all__ = ["WarmPool", "evaluate", "hardware_counters"]
