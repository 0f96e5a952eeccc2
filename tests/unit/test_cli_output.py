"""What `agentkern optimize` shows a person: the live view on a terminal and the closing lines."""

import io

from rich.console import Console

from agentkern import cli
from agentkern.loop.progress import LiveProgress

# Two strategies that differ only past the 60th character, where the live view used to cut them.
PREFIX = "softmax:algorithm=online_exp2/block_vecs=4,prefetch=0,schedule=static,unroll=2,"
FAST, SLOW = PREFIX + "simd=avx512", PREFIX + "simd=avx2"


def candidate(cid, strategy, speedup):
    return {"id": cid, "strategy": strategy, "status": "ok", "correct": True, "speedup": speedup}


def rendered(progress, width):
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(progress.render())
    return console.file.getvalue()


def test_the_live_view_shows_iteration_n_of_m_elapsed_time_and_whole_strategies():
    now = [100.0]
    progress = LiveProgress("agentkern optimize softmax", max_iters=5, clock=lambda: now[0])
    progress("profiler", {"iteration": 2, "candidate": candidate("002-0", FAST, 1.4)})
    progress("profiler", {"iteration": 2, "candidate": candidate("002-1", SLOW, 1.2)})
    now[0] += 125
    wide = rendered(progress, 200)
    assert "iteration 2 of 5" in wide and "2:05 elapsed" in wide
    assert FAST in wide and SLOW in wide  # neither cut: the rows do not look alike
    narrow = rendered(progress, 80)  # folded onto more lines, still whole
    assert "avx512" in narrow.replace("\n", "").replace("│", "").replace(" ", "")


def test_a_resumed_run_shows_the_iteration_without_a_total():
    progress = LiveProgress("agentkern optimize --resume X", max_iters=None)
    progress("planner", {"iteration": 3})
    assert "iteration 3  [planner]" in rendered(progress, 120)


def result(speedup):
    best = {
        "speedup": speedup,
        "kernel_ms": 1.0 / speedup,
        "reference_ms": 1.0,
        "path": "/runs/x/best_matmul.py",
        "strategy": "matmul:micro=8x32",
        "candidate": "001-0",
        "predicted": False,
    }
    return {
        "run_id": "x",
        "iterations": 2,
        "candidates": 4,
        "stopped_because": "reached --max-iters 2",
        "best": best,
        "beats_reference": speedup > 1,
        "target": "cpu",
        "problem": "matmul.py",
    }


def test_a_best_slower_than_the_reference_is_said_plainly(capsys, monkeypatch):
    monkeypatch.setattr(cli, "best_timing_noise", lambda result: None)
    cli.print_optimize_result(result(0.83))
    slower = capsys.readouterr().out
    assert "best 0.83x" in slower and "nothing beat the reference" in slower and "0.83x, not faster" in slower
    cli.print_optimize_result(result(1.42))
    assert "nothing beat" not in capsys.readouterr().out


def test_noisy_timing_of_the_best_is_shown(capsys, monkeypatch):
    monkeypatch.setattr(cli, "best_timing_noise", lambda result: "noisy timing: the kernel's mean is 8.0x")
    cli.print_optimize_result(result(1.42))
    assert "noisy timing" in capsys.readouterr().out
