"""What `agentkern optimize` shows a person: the live view on a terminal and the closing lines."""

import io

from rich.console import Console

from agentkern import cli
from agentkern.loop.progress import LiveProgress
from agentkern.types import EvalResult

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


def suspicious_verdict():
    """A verdict as harness/roofline_check.py leaves it: faster than the roofline after re-measuring."""
    from agentkern.harness.evaluate import _add_roofline
    from agentkern.targets import get_target

    stats = {"p10_ms": 0.1, "p90_ms": 0.1, "median_ms": 0.1, "calls": 50}
    result = EvalResult(
        "ok",
        True,
        speedup=10.0,
        reference_ms=1.0,
        kernel_ms=0.01,
        details={
            "backend": "cpp",
            "target": "h100",
            "device": "cuda",
            "trials": 5,
            "seeds": [1, 2, 3, 4, 5],
            "max_abs_diff": 0.0,
            "work": {"flops": 0.0, "bytes": 1e9, "dtype": "float32"},
            "timing": {"reference": stats, "kernel": stats, "mode": "offline"},
        },
    )
    _add_roofline(result, get_target("h100"), "cuda")
    return result


def test_eval_names_a_suspicious_verdict_and_what_the_check_did():
    from agentkern.verdict_view import print_eval

    result = suspicious_verdict()
    assert result.status == "suspicious"
    console = Console(file=io.StringIO(), width=200, color_system=None)
    print_eval(console, result)
    out = console.file.getvalue()
    assert out.startswith("suspicious  cpp kernel on h100")
    assert "beats the h100 roofline bound" in out and "10% margin" in out
    assert "correct over 5 trials" in out  # its outputs did match: said, not hidden
    assert "roofline check: kernel 0.01 ms" in out and "published figures" in out


def test_eval_says_where_the_exact_answer_judged_and_where_it_was_unavailable():
    from agentkern.verdict_view import exact_answer_line, print_eval

    result = suspicious_verdict()
    result.details["exact_answer"] = [
        {"at": "trial 0", "nearer_exact": 12, "ok": True},
        {"at": "timed call 3", "nearer_exact": 1, "ok": True},
        {"at": "trial 4", "unavailable": "the reference raised MemoryError: [too big]"},
    ]
    console = Console(file=io.StringIO(), width=300, color_system=None)
    print_eval(console, result)
    out = console.file.getvalue()
    assert "exact (float64) answer at 2 place(s) (trial 0, timed call 3): 13 position(s) off eager's" in out
    assert "no exact answer at trial 4: the reference raised MemoryError: [too big]" in out  # not taken as markup
    assert "still wrong" not in out
    wrong = exact_answer_line([{"at": "trial 2", "nearer_exact": 0, "ok": False}])
    assert wrong.endswith("still wrong at trial 2") and exact_answer_line([]) is None


def test_optimize_progress_shows_a_suspicious_candidate_by_its_status():
    from agentkern.loop.progress import _describe

    record = {**candidate("002-0", FAST, 50.0), "status": "suspicious", "correct": False}
    record["error"] = "0.02 ms beats the cpu roofline bound"
    line = _describe("profiler", {"candidate": record})
    assert "002-0" in line and ": suspicious 50.00x" in line and "beats the cpu roofline bound" in line
    progress = LiveProgress("agentkern optimize softmax", max_iters=5, clock=lambda: 0.0)
    progress("profiler", {"iteration": 2, "candidate": record})
    shown = rendered(progress, 200)
    assert "suspicious" in shown and "no correct candidate yet" in shown  # never the best
