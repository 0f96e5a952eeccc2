"""The roofline cost model that ranks GPU candidates when the GPU is absent: its figures must move the way
the hardware does (a tile that cannot fit fails, spills cost, fusion pays), never beat the roofline bound,
and reach the run's output marked as predicted."""

import math
import sqlite3

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from agentkern import targets as T
from agentkern.loop import run as optimize
from agentkern.loop.deps import OptimizeOptions
from agentkern.loop.nodes.critic import bottleneck
from agentkern.targets.costmodel import predict, reference_ms
from agentkern.types import EvalResult

GEMM = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3, "precision": "ieee", "GROUP_M": 8}
ROW = {"BLOCK_N": "row", "num_warps": 4, "ROWS": 1, "num_stages": 1}


def gemm_spec(M, N, K, batch=1):
    return {
        "family": "matmul",
        "attrs": {"M": M, "N": N, "K": K, "batch": batch},
        "input_shapes": [[M, K], [K, N]],
        "output_shape": [M, N],
        "eager_ops": [{"op": "mm", "in": M * K + K * N, "out": M * N, "flops": 2 * M * N * K}],
    }


def gemm_work(M, N, K):
    return {"flops": 2 * M * N * K, "bytes": 4 * (M * K + K * N + M * N), "dtype": "float32"}


def row_spec(family, rows, cols, eager):
    return {
        "family": family,
        "attrs": {"input": 0},
        "input_shapes": [[rows, cols]],
        "output_shape": [rows, cols],
        "eager_ops": eager,
    }


def row_work(rows, cols):
    return {"flops": 5 * rows * cols, "bytes": 8 * rows * cols, "dtype": "float32"}


@pytest.mark.parametrize("name", ["a100", "h100", "l4"])
def test_a_tile_that_does_not_fit_shared_memory_is_infeasible(name):
    big = {**GEMM, "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_stages": 5}
    p = predict(T.get_target(name), gemm_spec(4096, 4096, 4096), big, gemm_work(4096, 4096, 4096))
    assert not p.feasible and p.speedup is None
    assert "shared memory" in p.notes[0]


def test_predictions_never_beat_the_roofline_bound():
    for name in ("a100", "h100", "h200", "l4", "l40s", "rtx4090"):
        t = T.get_target(name)
        for M in (256, 4096):
            for params in (GEMM, {**GEMM, "precision": "tf32x3", "BLOCK_M": 128, "BLOCK_N": 128}):
                p = predict(t, gemm_spec(M, M, M), params, gemm_work(M, M, M))
                w = gemm_work(M, M, M)
                assert p.kernel_ms >= T.roofline_ms(t, w["flops"], w["bytes"], "float32")
        p = predict(t, row_spec("softmax", 8192, 4096, []), ROW, row_work(8192, 4096))
        assert p.kernel_ms >= T.roofline_ms(t, 0, 8 * 8192 * 4096, "float32")


def test_tensor_cores_beat_fma_on_a_large_fp32_gemm():
    t, M = T.get_target("h100"), 4096
    fma = predict(t, gemm_spec(M, M, M), {**GEMM, "BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8}, gemm_work(M, M, M))
    tc = predict(
        t,
        gemm_spec(M, M, M),
        {**GEMM, "BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "precision": "tf32x3"},
        gemm_work(M, M, M),
    )
    assert tc.kernel_ms < fma.kernel_ms


def test_grouped_tile_order_cuts_dram_traffic_when_operands_outgrow_l2():
    t, M = T.get_target("l4"), 8192  # 2 x 256 MB of operands against a 48 MB L2
    plain = predict(t, gemm_spec(M, M, M), {**GEMM, "GROUP_M": 1, "precision": "tf32x3"}, gemm_work(M, M, M))
    grouped = predict(t, gemm_spec(M, M, M), {**GEMM, "GROUP_M": 8, "precision": "tf32x3"}, gemm_work(M, M, M))
    assert grouped.kernel_ms <= plain.kernel_ms


def test_register_spills_and_tiny_tiles_are_penalised():
    t = T.get_target("a100")
    spec = row_spec("softmax", 4096, 8192, [{"op": "softmax", "in": 4096 * 8192, "out": 4096 * 8192}])
    good = predict(t, spec, {**ROW, "num_warps": 16}, row_work(4096, 8192))
    spilled = predict(t, spec, {**ROW, "num_warps": 1}, row_work(4096, 8192))
    assert spilled.kernel_ms > 2 * good.kernel_ms
    assert any("spill" in n for n in spilled.notes)
    tiny = predict(
        t,
        gemm_spec(2048, 2048, 2048),
        {**GEMM, "BLOCK_M": 16, "BLOCK_N": 32, "num_warps": 8},
        gemm_work(2048, 2048, 2048),
    )
    assert tiny.kernel_ms > predict(t, gemm_spec(2048, 2048, 2048), GEMM, gemm_work(2048, 2048, 2048)).kernel_ms


def test_fusing_an_eager_chain_is_predicted_to_pay():
    """Hand-written RMSNorm runs six eager kernels; one fused pass is predicted several times faster."""
    rows, cols = 8192, 4096
    n = rows * cols
    eager = [
        {"op": "pow", "in": n, "out": n},
        {"op": "mean", "in": n, "out": rows},
        {"op": "add", "in": rows, "out": rows},
        {"op": "rsqrt", "in": rows, "out": rows},
        {"op": "mul", "in": n + rows, "out": n},
        {"op": "mul", "in": n + cols, "out": n},
    ]
    p = predict(T.get_target("h100"), row_spec("rmsnorm", rows, cols, eager), ROW, row_work(rows, cols))
    assert p.speedup > 2.5
    looped = predict(
        T.get_target("h100"), row_spec("rmsnorm", rows, cols, eager), {**ROW, "BLOCK_N": 1024}, row_work(rows, cols)
    )
    assert looped.kernel_ms > p.kernel_ms  # a second pass over the row costs, even from L2


def test_reference_sums_one_launch_per_eager_op():
    t = T.get_target("h100")
    one = reference_ms(t, {"eager_ops": [{"op": "relu", "in": 1, "out": 1}]}, {})
    three = reference_ms(t, {"eager_ops": [{"op": "relu", "in": 1, "out": 1}] * 3}, {})
    assert math.isclose(three, 3 * one)


def test_a_hand_written_candidate_gets_a_generic_prediction_that_says_so():
    p = predict(T.get_target("h100"), None, None, row_work(1024, 1024))
    assert p.feasible and p.speedup > 0
    assert "no parameters" in p.notes[0]


# ---- the loop: a GPU target that is not here ---------------------------------------------------------
class GemmPolicy:
    spec = gemm_spec(2048, 2048, 2048)

    def __init__(self):
        self.variants = [
            GEMM,
            {**GEMM, "BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "precision": "tf32x3"},
            {**GEMM, "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_stages": 5},
        ]

    def plan(self, ctx):
        return {"summary": "fixed list"}

    def write(self, plan, ctx, beam):
        out = []
        while self.variants and len(out) < beam:
            params = self.variants.pop(0)
            out.append(
                {
                    "strategy": f"matmul:{params['precision']}/{params['BLOCK_M']}x{params['BLOCK_N']}x{params['BLOCK_K']}",
                    "params": params,
                    "parent": None,
                    "source": f"# {params}\nclass ModelNew: pass\n",
                }
            )
        return out


def interpreter_verdict(problem_path, path, target_name, options):
    """What the harness says for a correct Triton kernel whose GPU is absent: correct, not timed."""
    return EvalResult(
        "ok",
        True,
        details={
            "timing": {"unavailable": "no H100 here"},
            "bound": "compute",
            "work": gemm_work(2048, 2048, 2048),
            "roofline_bound_ms": 0.035,
        },
    )


def test_an_absent_gpu_run_ranks_by_predictions_and_says_they_are_predicted(tmp_path, monkeypatch):
    monkeypatch.setattr(T, "is_present", lambda target: False)
    opts = OptimizeOptions(problem="matmul", target="h100", backend="triton", beam=3, max_iters=2)
    result = optimize.run(
        opts,
        policy=GemmPolicy(),
        evaluate=interpreter_verdict,
        checkpointer=SqliteSaver(sqlite3.connect(tmp_path / "cp.db", check_same_thread=False)),
    )
    best = result["best"]
    assert best["predicted"] is True
    assert best["strategy"].startswith("matmul:tf32x3")  # the cost model's pick, not the first candidate
    store = optimize.open_store()
    rows = {c["candidate_id"]: c for c in store.candidates(result["run_id"])}
    assert all(r["predicted"] == 1 for r in rows.values())
    statuses = sorted(r["status"] for r in rows.values())
    assert statuses == ["infeasible", "ok", "ok"]  # the tile that cannot fit shared memory
    critic = [s for s in store.steps(result["run_id"]) if s["agent"] == "critic"][0]
    assert "predicted" in critic["payload"] and "Cost model" in critic["payload"]


def test_bottleneck_names_the_limit():
    memory = bottleneck({"bound": "memory", "roofline_fraction": 0.3})
    assert memory.startswith("Memory-bound at 30%") and "far from the bandwidth limit" in memory
    counted = bottleneck(
        {
            "bound": "compute",
            "roofline_fraction": 0.8,
            "counters": {
                "available": True,
                "values": {"achieved_occupancy_pct": 25.0, "dram_throughput_pct": 10.0},
                "top_stalls": [{"reason": "long_scoreboard", "cycles_per_issue": 3.1}],
            },
        }
    )
    assert "near peak" in counted and "Occupancy 25%" in counted and "long_scoreboard" in counted
