"""A Triton candidate compiled for the target GPU's architecture without that GPU (issue 15): its resources and
instruction mix in the verdict, and a kernel that cannot launch there refused."""

from pathlib import Path

import pytest

from agentkern.harness.evaluate import evaluate
from agentkern.types import EvalOptions

GEMM = Path(__file__).parents[1] / "data" / "triton_gemm_fp16.py"
QUICK = EvalOptions(trials=2, second_shape="off")


def _variant(tmp_path, **constants) -> Path:
    text = GEMM.read_text()
    for name, value in constants.items():
        text = text.replace(f"\n{name} = ", f"\n{name} = {value}  # was ", 1)
    path = tmp_path / "variant.py"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("target", "tensor_op", "arch"), [("h100", "wgmma", "sm_90a"), ("a100", "mma", "sm_80")])
def test_a_hand_written_triton_kernel_gets_its_compiled_resources(target, tensor_op, arch):
    verdict = evaluate("matmul_fp16", GEMM, target, QUICK)
    assert verdict.status == "ok", verdict.error
    compiled = verdict.details["compiled"]
    assert compiled["arch"] == arch and compiled["source"] == "compiled from the source text"
    (kernel,) = compiled["kernels"]
    assert kernel["kernel"] == "gemm_kernel" and kernel["instructions"][tensor_op] > 0
    assert 0 < kernel["registers"] <= 255 and kernel["shared_bytes"] > 0 and kernel["threads"] == 128
    assert 0 < kernel["occupancy"] <= 1 and "cannot_launch" not in kernel
    # compiled and predicted at the problem's gpu size (M = N = K = 8192), checked at a small one
    assert compiled["size"] == "gpu" and compiled["launches"][0]["grid"][:2] == [128, 128]
    prediction = verdict.details["prediction"]
    assert prediction["predicted"] and prediction["size"] == {"M": 8192, "N": 8192, "K": 8192}
    assert prediction["kernel_ms"] > prediction["bound_ms"] > 0 and prediction["reference_ms"] > 0
    low, high = prediction["band"]["speedup"]
    assert low < prediction["speedup"] < high


def test_a_kernel_reading_a_constant_the_file_computes_is_not_refused(tmp_path):
    """The compiler sees only the file's literal constants: a kernel that reads one computed at import cannot
    be compiled here, which is the harness's limit, not the kernel's fault."""
    text = GEMM.read_text().replace("NUM_STAGES = 3", "NUM_STAGES = 3\nSCALE = float(len('x'))")
    text = text.replace("c = acc.to(tl.float16)", "c = (acc * SCALE).to(tl.float16)")
    path = tmp_path / "computed.py"
    path.write_text(text)
    verdict = evaluate("matmul_fp16", path, "h100", QUICK)
    assert verdict.status == "ok", verdict.error
    (kernel,) = verdict.details["compiled"]["kernels"]
    assert "SCALE" in kernel["unavailable"] and "refused" not in verdict.details["compiled"]


def test_tiles_that_need_more_shared_memory_than_the_target_has_are_refused(tmp_path):
    big = _variant(tmp_path, BLOCK_M=256, BLOCK_N=256, BLOCK_K=256)
    verdict = evaluate("matmul_fp16", big, "h100", QUICK)
    assert verdict.status == "compile_error" and not verdict.correct and verdict.speedup is None
    assert "227 KiB" in verdict.error and verdict.details["rejected_because"] == "cannot_launch_on_target"


def test_a_gpu_size_too_large_for_the_sandbox_is_not_planned_and_the_prediction_says_its_size(tmp_path):
    problem = tmp_path / "huge_gemm.py"
    text = (Path(__file__).parents[2] / "kernels_dataset" / "problems" / "matmul_fp16.py").read_text()
    problem.write_text(
        text.replace('"gpu": {"M": 8192, "N": 8192, "K": 8192}', '"gpu": {"M": 65536, "N": 65536, "K": 65536}')
    )
    verdict = evaluate(problem, GEMM, "h100", QUICK)
    assert verdict.status == "ok", verdict.error
    assert "GiB" in verdict.details["plan"]["unavailable"]  # 3 x 8 GiB of fp16 tensors: over half of 8 GiB
    # matmul_fp16's cpu size (128^3) is small enough to check as it is: the figures are for that size, said so
    assert "check_size" not in verdict.details and verdict.details["prediction"]["size"] == "cpu"


AUTOTUNED = Path(__file__).parents[1] / "data" / "triton_gemm_autotuned.py"


def test_an_autotuned_kernel_is_judged_by_the_configs_that_can_launch(tmp_path):
    """@triton.autotune cannot time in the interpreter: its configs are noted as alternatives, all compiled;
    one that cannot launch is skipped (as the GPU's autotuner would), all failing is a refusal."""
    verdict = evaluate("matmul_fp16", AUTOTUNED, "h100", QUICK)
    assert verdict.status == "ok", verdict.error
    kernels = verdict.details["compiled"]["kernels"]
    assert sorted(k["alternative"] for k in kernels) == [0, 1]
    assert "227 KiB" in kernels[0]["cannot_launch"] and "cannot_launch" not in kernels[1]
    assert verdict.details["prediction"]["kernel_ms"] > 0  # priced from the config that launches
    all_big = tmp_path / "all_big.py"
    all_big.write_text(AUTOTUNED.read_text().replace("(64, 64, 32)]", "(256, 256, 128)]"))
    refused = evaluate("matmul_fp16", all_big, "h100", QUICK)
    assert refused.status == "compile_error" and "227 KiB" in refused.error and "more of its configs" in refused.error


def test_every_config_of_an_autotuned_kernel_is_checked(tmp_path):
    """The configs take turns in the trials: a kernel wrong only in its second config is caught."""
    wrong = tmp_path / "wrong_second_config.py"
    text = AUTOTUNED.read_text()
    wrong.write_text(
        text.replace(
            "    c = acc.to(tl.float16)", "    if BK == 32:\n        acc = acc * 2.0\n    c = acc.to(tl.float16)"
        )
    )
    verdict = evaluate("matmul_fp16", wrong, "h100", QUICK)
    assert verdict.status == "incorrect", (verdict.status, verdict.error)
