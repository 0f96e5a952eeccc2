"""`agentkern bench`: suites of problems, the field's metrics, report comparison, GEMM shape sweeps.

suites.py (what SUITE means), runner.py (optimise each problem, time torch.compile), metrics.py (fast_p,
pass@k, speedup@k, geomean; pure), report.py (JSON and Markdown), compare.py (regressions for CI),
gemm_sweep.py (the template GEMM vs torch.matmul over many shapes), cli.py (the commands).
"""
