"""Benchmark: the knowledge base's build time, query latency and retrieval quality.

    python benchmarks/kb_query.py [--embedding hashing|minilm] [--queries 20]

In a fresh AGENTKERN_HOME (a temporary folder; HF_HUB_OFFLINE=1 so nothing can be downloaded):
  cli build    `agentkern kb build` in a new process, from nothing: Python start, imports, parsing, embedding
  build        KnowledgeBase.ensure_built() from nothing, in process (the part that depends on the corpus)
  no-op        ensure_built() again, nothing changed (what every query pays: hashing the source files)
  query        median and max of --queries filtered queries, in process, after one warm-up query
  cli query    `agentkern kb query ...` in a new process on the built index
  recall@k     over tests/data/kb_eval.jsonl (when it exists) against knowledge_base/ and kernels_dataset/,
               with each question's target and backend filters, as tests/unit/test_kb.py measures it
It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # runs from a checkout, installed or not (e.g. a scratch venv with the minilm extra)
EVAL_SET = ROOT / "tests" / "data" / "kb_eval.jsonl"

QUERIES = [
    ("shared memory per SM and L2 size", "h100", "triton"),
    ("tensor cores wgmma TMA", "h100", "cuda"),
    ("memory coalescing float4 vector loads", "a100", "cuda"),
    ("BLOCK_M BLOCK_N num_warps choice", "l4", "triton"),
    ("AVX2 FMA peak throughput", "cpu", "cpp"),
    ("online softmax running max", None, None),
    ("HBM bandwidth of the H200", "h200", None),
    ("L40S fp8 tensor throughput", "l40s", None),
    ("OpenMP schedule static or dynamic", "cpu", "cpp"),
    ("matmul register tiling micro-kernel", "cpu", "cpp"),
    ("bank conflicts in shared memory", None, "cuda"),
    ("software pipelining num_stages", "a100", "triton"),
    ("layernorm mean and variance in one pass", None, None),
    ("relu elementwise memory-bound kernel", "rtx4090", None),
    ("split-K reduction for skinny matrices", None, "triton"),
    ("occupancy registers per thread", "l4", "cuda"),
    ("non-temporal stores for large outputs", "cpu", "cpp"),
    ("bf16 tl.dot upcast", None, "triton"),
    ("roofline arithmetic intensity", None, None),
    ("warp shuffle reduction", "h100", "cuda"),
]


def recall(kb, ks=(1, 3, 5)) -> dict:
    questions = [json.loads(line) for line in EVAL_SET.read_text().splitlines() if line.strip()]
    hits = dict.fromkeys(ks, 0)
    for q in questions:
        found = [r["id"] for r in kb.query(q["question"], q.get("target"), q.get("backend"), k=max(ks))]
        for k in ks:
            hits[k] += q["expected"] in found[:k]
    return {"questions": len(questions), **{f"recall@{k}": round(hits[k] / len(questions), 3) for k in ks}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedding", default="hashing", choices=["hashing", "minilm"])
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()

    home = tempfile.mkdtemp(prefix="agentkern-kb-bench-")
    os.environ.update(
        AGENTKERN_HOME=home, AGENTKERN_KB_EMBEDDING=args.embedding, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cli = [sys.executable, "-m", "agentkern", "kb"]

    start = time.perf_counter()
    proc = subprocess.run([*cli, "build"], capture_output=True, text=True, cwd=ROOT, env=env)
    cli_build = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    print(f"cli build (fresh home, {args.embedding}): {cli_build:.2f} s  [{proc.stdout.strip()}]")

    from agentkern.kb.store import KnowledgeBase

    kb = KnowledgeBase(root=Path(home) / "kb-inproc")
    start = time.perf_counter()
    built = kb.ensure_built()
    print(
        f"build in process: {time.perf_counter() - start:.2f} s for {built['documents']} documents, "
        f"{built['chunks']} chunks (embedding alone: {built['seconds']:.2f} s incl. chroma writes)"
    )
    start = time.perf_counter()
    kb.ensure_built()
    print(f"no-op ensure_built: {(time.perf_counter() - start) * 1e3:.1f} ms")

    kb.query("warm-up", k=3)
    times = []
    for n in range(args.queries):
        text, target, backend = QUERIES[n % len(QUERIES)]
        start = time.perf_counter()
        kb.query(text, target, backend, k=3)
        times.append(time.perf_counter() - start)
    print(
        f"query in process: median {statistics.median(times) * 1e3:.1f} ms, max {max(times) * 1e3:.1f} ms "
        f"over {len(times)} filtered queries (k=3)"
    )

    start = time.perf_counter()
    proc = subprocess.run(
        [*cli, "query", "tensor cores on Hopper", "--target", "h100", "--k", "3", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    print(f"cli query (new process, incl. Python start and imports): {time.perf_counter() - start:.2f} s")

    if EVAL_SET.exists():
        print(f"retrieval ({args.embedding}): {json.dumps(recall(kb))}")
    else:
        print("no tests/data/kb_eval.jsonl: recall not measured")


if __name__ == "__main__":
    main()
    shutil.rmtree(os.environ["AGENTKERN_HOME"], ignore_errors=True)
