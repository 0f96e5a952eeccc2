"""Suite metrics, defined as KernelBench and Chen et al. (2021) define them. Pure functions, no torch.

Each function takes one entry per problem of the suite, failed problems included:
- a speedup: a number for a problem solved correctly, None for one that was not (failed, crashed, not
  loaded, or solved without a timing to compare);
- or, for pass@k and speedup@k, the problem's candidates in evaluation order: n = how many, c = how many
  were correct, and each correct candidate's speedup (None for an incorrect one).

Definitions (docs/bench.md):
- fast_p: share of ALL problems whose kernel is correct AND faster than p: speedup > p, strictly (a tie
  at exactly p is not faster). fast_0 is the share solved correctly; a correct problem with no timing
  counts for fast_0 only.
- pass@k: the unbiased estimator 1 - C(n-c, k) / C(n, k) per problem, averaged over all problems. When a
  problem has fewer than k candidates (n < k) it is pass@n: 1 if any candidate is correct, else 0. A
  problem with no candidates scores 0.
- speedup@k: per problem, the best speedup among its first k candidates that are correct (all of them
  when n < k), 0 when none is; the arithmetic mean over all problems.
- geomean_speedup: geometric mean of the speedups of the problems solved correctly with a timing; null
  when there are none.
Every metric of an empty suite is null: "nothing measured" must not read as 0%.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from agentkern.candidates import speedup_at_k_of

FAST_P = {"fast_0": 0.0, "fast_1": 1.0, "fast_1_5": 1.5, "fast_2": 2.0}


def fast_p(speedups: Sequence[float | None | bool], p: float) -> float | None:
    """Share of problems correct and faster than p. An entry is a speedup, None (not correct), or True
    (correct, no timing: counts for p = 0 only)."""
    if not speedups:
        return None
    hits = 0
    for s in speedups:
        if s is True:
            hits += p == 0
        elif s is not None and s is not False and s > p:
            hits += 1
    return hits / len(speedups)


def pass_at_k_one(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with n candidates of which c are correct (Chen et al. 2021)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if n == 0 or c == 0:
        return 0.0
    if n < k or n - c < k:  # every draw of min(k, n) candidates contains a correct one
        return 1.0
    # 1 - C(n-c, k)/C(n, k) = 1 - prod_{i=n-c+1..n} (1 - k/i), stable for large n
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float | None:
    """Mean pass@k over problems, given (n, c) per problem."""
    if not counts:
        return None
    return sum(pass_at_k_one(n, c, k) for n, c in counts) / len(counts)


def speedup_at_k(per_problem: Sequence[Sequence[float | None]], k: int) -> float | None:
    """Mean over problems of the best correct speedup among each problem's first k candidates (0 if none)."""
    if not per_problem:
        return None
    return sum(speedup_at_k_of(c, k) for c in per_problem) / len(per_problem)


def geomean(speedups: Sequence[float | None | bool]) -> float | None:
    """Geometric mean over the problems solved correctly with a (positive) speedup; None when none are."""
    xs = [float(s) for s in speedups if s is not None and not isinstance(s, bool) and s > 0]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def suite_metrics(rows: Sequence[dict], k: int, baseline: str = "eager") -> dict:
    """The metrics object of a bench report, from its problem rows (report.py's row format): `speedup_eager`
    or `speedup_compile` per the baseline, `candidates`, `correct_candidates`, `candidate_speedups`."""
    key = f"speedup_{baseline}"
    best = [_best(r, key) for r in rows]
    counts = [(int(r.get("candidates") or 0), int(r.get("correct_candidates") or 0)) for r in rows]
    per_problem = [_candidate_speedups(r, baseline) for r in rows]
    out = {name: fast_p(best, p) for name, p in FAST_P.items()}
    out.update(
        pass_at_k=pass_at_k(counts, k),
        speedup_at_k=speedup_at_k(per_problem, k),
        geomean_speedup=geomean(best),
        k=k,
        baseline=baseline,
        problems=len(rows),
        solved=sum(1 for b in best if b is not None),
    )
    return out


def _best(row: dict, key: str) -> float | bool | None:
    if row.get("status") != "ok":
        return None
    value = row.get(key)
    return True if value is None else value  # correct, but no timing against this baseline


def _candidate_speedups(row: dict, baseline: str) -> list[float | None]:
    speedups = list(row.get("candidate_speedups") or [])
    if baseline == "eager":
        return speedups
    # vs torch.compile: each candidate's eager speedup times eager/compile time measured in the baseline run
    factor = row.get("compile_factor")
    return [None if s is None or factor is None else s * factor for s in speedups]
