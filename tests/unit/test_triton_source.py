"""Taking a candidate's Triton kernels out of its file without running it (harness/triton_source.py), and the
architecture limits they are checked against (targets/gpu_arch.py)."""

import pytest

from agentkern import targets as T
from agentkern.harness.triton_source import Unreducible, reduce_source
from agentkern.targets import gpu_arch

KERNEL = """
import os
import triton
import triton.language as tl
import numpy as np

BLOCK = 128
WIDER = BLOCK * 2 ** 3
HUGE = 2 ** 100000
SCALE: float = 0.5
WIDE = tl.constexpr(256)
COMPUTED = os.getpid()
os.system("echo pwned")


def helper():
    return 1


@triton.autotune(configs=[triton.Config({"B": 64})], key=["n"])
@triton.jit
def add_kernel(x_ptr, y_ptr, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)
"""


def test_the_reduction_keeps_the_kernels_and_literal_constants_and_nothing_that_runs():
    text, kernels = reduce_source(KERNEL)
    assert kernels == ["add_kernel"]
    assert "BLOCK = 128" in text and "SCALE: float = 0.5" in text and "WIDE = tl.constexpr(256)" in text
    assert "WIDER = BLOCK * 2 ** 3" in text  # arithmetic on literals and earlier constants
    for gone in ("os.system", "getpid", "numpy", "def helper", "autotune", "import os", "HUGE"):
        assert gone not in text
    assert "@triton.jit" in text


@pytest.mark.parametrize(
    ("snippet", "why"),
    [
        ("@triton.jit\ndef k(x, n=__import__('os').getpid()):\n    pass\n", "default value is code"),
        ("@triton.jit\ndef k(x: print('hi')):\n    pass\n", "annotation"),
        ("@triton.jit(debug=open('/etc/passwd').read())\ndef k(x):\n    pass\n", "arguments are code"),
        ("import triton\nx = 1\n", "no @triton.jit"),
        ("def broken(:\n", "does not parse"),
    ],
)
def test_code_where_a_literal_must_be_refuses_the_reduction(snippet, why):
    with pytest.raises(Unreducible, match=why):
        reduce_source("import triton\nimport triton.language as tl\n" + snippet)


def test_a_block_needing_more_shared_memory_than_the_architecture_allows_cannot_launch():
    h100 = gpu_arch.arch_of(T.get_target("h100"))
    a100 = gpu_arch.arch_of(T.get_target("a100"))
    big = gpu_arch.Resources(registers_per_thread=128, shared_bytes=256 * 1024, threads_per_block=256)
    fits_h100 = gpu_arch.Resources(registers_per_thread=128, shared_bytes=200 * 1024, threads_per_block=256)
    assert "227 KiB" in gpu_arch.launch_refusal(h100, big, "H100")
    assert gpu_arch.launch_refusal(h100, fits_h100, "H100") is None
    assert "163 KiB" in gpu_arch.launch_refusal(a100, fits_h100, "A100")
    too_many_registers = gpu_arch.Resources(registers_per_thread=255, shared_bytes=0, threads_per_block=1024)
    assert "registers per block" in gpu_arch.launch_refusal(h100, too_many_registers, "H100")


def test_occupancy_is_limited_by_threads_registers_or_shared_memory():
    h100 = gpu_arch.arch_of(T.get_target("h100"))
    light = gpu_arch.Resources(registers_per_thread=21, shared_bytes=16, threads_per_block=128)
    assert gpu_arch.blocks_per_sm(h100, light) == 16 and gpu_arch.occupancy(h100, light) == 1.0
    heavy_registers = gpu_arch.Resources(registers_per_thread=128, shared_bytes=0, threads_per_block=256)
    assert gpu_arch.blocks_per_sm(h100, heavy_registers) == 2  # 65536 / (128 x 256)
    heavy_shared = gpu_arch.Resources(registers_per_thread=32, shared_bytes=100 * 1024, threads_per_block=128)
    assert gpu_arch.blocks_per_sm(h100, heavy_shared) == 2  # 228 KiB / (100 + 1 KiB)


def test_every_catalog_gpu_has_architecture_limits():
    for name in T.GPU_NAMES:
        assert gpu_arch.arch_of(T.get_target(name)) is not None, name


def test_a_user_adds_a_gpu_with_a_file_under_agentkern_home(tmp_path, monkeypatch):
    import json

    from agentkern.errors import UserError

    monkeypatch.setenv("AGENTKERN_HOME", str(tmp_path))
    (tmp_path / "targets").mkdir()
    entry = {
        "name": "mi-test",
        "display_name": "Test GPU",
        "aliases": ["testgpu"],
        "compute_capability": "9.0",
        "peak_tflops": {"fp32": 50.0, "fp16": 800.0},
        "memory_bandwidth_gbs": 3000.0,
        "sms": 100,
        "shared_mem_per_sm_kb": 228,
        "sources": {"peak_tflops.fp32": "a test"},
    }
    (tmp_path / "targets" / "mine.json").write_text(json.dumps({"gpus": [entry]}))
    target = T.get_target("TestGPU")
    assert target.name == "mi-test" and target.peak_tflops["fp16"] == 800.0 and target.l2_mb is None
    assert "mi-test" in [t.name for t in T.list_targets()] and gpu_arch.arch_of(target).ptx_arch == "sm_90a"
    (tmp_path / "targets" / "broken.json").write_text(json.dumps({"gpus": [{"name": "x"}]}))
    with pytest.raises(UserError, match="broken.json.*lacks"):
        T.get_target("h100")


def test_doctor_says_whether_triton_can_compile_for_gpus_here():
    from agentkern.doctor import _triton_for_gpus

    check = _triton_for_gpus()
    assert check["ok"], check["found"]  # the pinned triton wheel ships ptxas and cuobjdump
    assert "ptxas and cuobjdump" in check["found"]
