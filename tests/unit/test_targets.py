"""Targets: the GPU catalog, CPU detection and its cached measurements, and the roofline bound."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agentkern import targets
from agentkern.errors import UserError
from agentkern.types import Target

GPU_NAMES = ["a100", "h100", "h200", "l4", "l40s", "rtx4090", "b200"]
NUMERIC_FIGURES = ["memory_bandwidth_gbs", "memory_gb", "sms", "shared_mem_per_sm_kb", "l2_mb"]
FAKE_MEASUREMENT = {
    "dram_gbs": 20.0,
    "cache_gbs": 200.0,
    "matmul_tflops": 0.001,
    "fma_tflops": 0.001,
    "trials": 4,
    "cache_copy_kib": 64,
}


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTKERN_HOME", str(tmp_path / "home"))
    targets.local_gpu_name.cache_clear()
    yield
    targets.local_gpu_name.cache_clear()


@pytest.fixture
def measure_calls(monkeypatch):
    """Replace the half-second host measurement with a counted fake."""
    calls = []

    def fake(cores, l2_kb):
        calls.append((cores, l2_kb))
        return dict(FAKE_MEASUREMENT)

    monkeypatch.setattr(targets.host, "_measure_host", fake)
    return calls


def fake_nvidia_smi(tmp_path, monkeypatch, script: str) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\n{script}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(bindir))


# ---- the GPU catalog ----


@pytest.mark.parametrize("name", GPU_NAMES)
def test_gpu_has_every_figure_with_a_source(name):
    t = targets.get_target(name)
    assert t.kind == "gpu"
    expected = {"fp32", "tf32", "fp16", "bf16", "int8", "fp64"} | ({"fp8"} if name != "a100" else set())
    assert set(t.peak_tflops) == expected
    assert all(v > 0 for v in t.peak_tflops.values())
    published = [f for f in NUMERIC_FIGURES if getattr(t, f) is not None]
    for figure in NUMERIC_FIGURES:  # a figure left out is said so in the notes
        assert figure in published or "L2 size not" in t.notes, figure
    for figure in published:
        assert getattr(t, figure) > 0, figure
    assert t.compute_capability in ("8.0", "8.9", "9.0", "10.0")
    figures = [f"peak_tflops.{k}" for k in t.peak_tflops] + published + ["compute_capability"]
    assert set(t.sources) == set(figures)
    # The figures the roofline divides by must point at a published NVIDIA page, or say plainly they do not.
    nvidia = "Not from an NVIDIA page" not in t.notes
    for figure in [f"peak_tflops.{k}" for k in t.peak_tflops] + ["memory_bandwidth_gbs", "memory_gb"]:
        assert "https://" in t.sources[figure] and ("nvidia.com" in t.sources[figure] or not nvidia), figure
    assert "dense" in t.notes.lower() and "sparsity" in t.notes.lower()


@pytest.mark.parametrize(
    "name, figure, value",
    [
        ("a100", "fp16", 312.0),
        ("a100", "tf32", 156.0),
        ("a100", "fp64", 19.5),
        ("h100", "fp16", 989.4),
        ("h100", "fp8", 1978.9),
        ("h100", "tf32", 494.7),
        ("h200", "bf16", 989.4),
        ("l4", "fp8", 242.5),
        ("l40s", "fp16", 362.05),
        ("rtx4090", "fp16", 330.3),
        ("rtx4090", "bf16", 165.2),
        ("rtx4090", "fp32", 82.6),
    ],
)
def test_published_dense_peaks(name, figure, value):
    assert targets.get_target(name).peak_tflops[figure] == value


@pytest.mark.parametrize(
    "name, bandwidth, memory, sms, smem, l2",
    [
        ("a100", 2039, 80, 108, 164, 40),
        ("h100", 3350, 80, 132, 228, 50),
        ("h200", 4800, 141, 132, 228, 50),
        ("l4", 300, 24, 58, 100, 48),
        ("l40s", 864, 48, 142, 100, 96),
        ("rtx4090", 1008, 24, 128, 100, 72),
    ],
)
def test_published_memory_and_layout(name, bandwidth, memory, sms, smem, l2):
    t = targets.get_target(name)
    assert (t.memory_bandwidth_gbs, t.memory_gb, t.sms, t.shared_mem_per_sm_kb, t.l2_mb) == (
        bandwidth,
        memory,
        sms,
        smem,
        l2,
    )


@pytest.mark.parametrize("name", GPU_NAMES)
def test_narrower_types_are_never_slower(name):
    p = targets.get_target(name).peak_tflops
    assert p.get("fp8", p["fp16"]) >= p["fp16"] >= p["tf32"] >= p["fp32"]


# ---- names ----


@pytest.mark.parametrize(
    "alias, name",
    [
        ("H100", "h100"),
        ("h100-sxm", "h100"),
        ("H100_SXM5", "h100"),
        ("a100-80gb", "a100"),
        ("A100 SXM4", "a100"),
        ("4090", "rtx4090"),
        ("RTX 4090", "rtx4090"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("L40S", "l40s"),
        ("l4", "l4"),
        ("h200-sxm", "h200"),
        ("host", "cpu"),
        ("CPU", "cpu"),
    ],
)
def test_aliases_are_case_insensitive(alias, name, measure_calls):
    assert targets.get_target(alias).name == name


def test_unknown_target_is_a_one_line_user_error():
    with pytest.raises(UserError) as err:
        targets.get_target("tpu-v5")
    message = str(err.value)
    assert message.startswith("unknown target 'tpu-v5'; known targets: ")
    assert "\n" not in message
    for name in ["cpu", *GPU_NAMES]:
        assert name in message


def test_a100_40gb_is_not_the_80gb_part():
    with pytest.raises(UserError):  # 1555 GB/s, not 2039: a silent alias would give a wrong bound
        targets.get_target("a100-40gb")


def test_list_targets_puts_cpu_first(measure_calls):
    assert [t.name for t in targets.list_targets()] == ["cpu", *GPU_NAMES]


# ---- the local GPU ----


def test_auto_is_cpu_without_nvidia_smi(tmp_path, monkeypatch, measure_calls):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi anywhere
    assert targets.local_gpu_name() is None
    assert targets.get_target("auto").name == "cpu"
    assert not targets.is_present(targets.get_target("h100"))
    assert targets.is_present(targets.get_target("cpu"))


def test_auto_picks_the_local_gpu(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, monkeypatch, 'echo "NVIDIA H100 80GB HBM3"; echo "NVIDIA H100 80GB HBM3"')
    assert targets.local_gpu_name() == "NVIDIA H100 80GB HBM3"
    assert targets.get_target("AUTO").name == "h100"
    assert targets.is_present(targets.get_target("h100"))
    assert not targets.is_present(targets.get_target("h200"))


def test_measured_on_names_the_machine_whose_times_are_recorded(tmp_path, monkeypatch, measure_calls):
    fake_nvidia_smi(tmp_path, monkeypatch, 'echo "NVIDIA H100 80GB HBM3"')
    from agentkern.targets.host import cpu_description

    assert targets.measured_on(targets.get_target("cpu")) == cpu_description()
    assert targets.measured_on(targets.get_target("h100")) == "NVIDIA H100 80GB HBM3"
    assert targets.measured_on(targets.get_target("a100")) is None  # not here: its times are predicted


def test_auto_is_cpu_for_a_gpu_outside_the_catalog(tmp_path, monkeypatch, measure_calls):
    fake_nvidia_smi(tmp_path, monkeypatch, 'echo "Tesla T4"')
    assert targets.get_target("auto").name == "cpu"


def test_failing_nvidia_smi_gives_none(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, monkeypatch, 'echo "NVIDIA-SMI has failed" >&2; exit 9')
    assert targets.local_gpu_name() is None


@pytest.mark.parametrize(
    "smi_name, name",
    [
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("NVIDIA L40", None),
        ("NVIDIA GH200 480GB", None),
        (None, None),
    ],
)
def test_nvidia_smi_names_match_whole_tokens(smi_name, name):
    assert targets.catalog._match_gpu(smi_name) == name


# ---- the roofline ----


def test_roofline_compute_bound():
    h100 = targets.get_target("h100")
    # 989.4 TFLOP at 989.4 TFLOP/s is one second; 1 MB at 3.35 TB/s is far less.
    assert targets.roofline_ms(h100, 989.4e12, 1e6, "float16") == pytest.approx(1000.0)
    assert targets.roofline_ms(h100, 67e12, 0, "float64") == pytest.approx(1000.0)
    assert targets.roofline_ms(h100, 1978.9e9, 0, "float8_e4m3fn") == pytest.approx(1.0)
    assert targets.roofline_ms(h100, 989.4e9, 0, "torch.bfloat16") == pytest.approx(1.0)


def test_roofline_memory_bound():
    a100 = targets.get_target("a100")
    # 2039 GB at 2039 GB/s is one second; 1 GFLOP takes microseconds.
    assert targets.roofline_ms(a100, 1e9, 2039e9, "float32") == pytest.approx(1000.0)


def test_roofline_fp32_uses_tf32():
    a100 = targets.get_target("a100")
    # 156 TFLOP at the TF32 rate is one second, not the eight seconds of the 19.5 TFLOP/s CUDA cores.
    assert targets.roofline_ms(a100, 156e12, 0, "float32") == pytest.approx(1000.0)


def test_roofline_other_dtypes():
    a100 = targets.get_target("a100")
    assert targets.roofline_ms(a100, 19.5e9, 0, "int32") == pytest.approx(1.0)  # fp32 rate
    assert targets.roofline_ms(a100, 624e9, 0, "int8") == pytest.approx(1.0)  # int8 tensor cores
    assert targets.roofline_ms(a100, 624e9, 0, "float8_e5m2") == pytest.approx(1.0)  # no fp8: the fastest unit


def test_roofline_of_nothing_is_zero():
    assert targets.roofline_ms(targets.get_target("l4"), 0, 0, "float32") == 0.0


def test_roofline_cpu_uses_cache_bandwidth_for_cache_resident_data(monkeypatch):
    monkeypatch.setattr(targets.host, "cpu_cache_bandwidth_gbs", lambda: 100.0)
    cpu = Target(
        name="cpu",
        kind="cpu",
        display_name="test",
        peak_tflops={"fp32": 1.0},
        memory_bandwidth_gbs=10.0,
        cores=4,
        l2_mb=1.0,
        l3_mb=8.0,
    )
    assert targets.roofline_ms(cpu, 0, 1e6, "float32") == pytest.approx(1e6 / 100e6)  # fits the L3: cache
    assert targets.roofline_ms(cpu, 0, 8 * 2**20, "float32") == pytest.approx(8 * 2**20 / 100e6)
    assert targets.roofline_ms(cpu, 0, 1e9, "float32") == pytest.approx(1e9 / 10e6)  # DRAM
    assert targets.roofline_ms(cpu, 1e12, 1e6, "float32") == pytest.approx(1000.0)  # compute-bound


# ---- the CPU target ----


def test_cpu_detection(measure_calls):
    cpu = targets.get_target("cpu")
    assert cpu.kind == "cpu" and cpu.cores >= 1
    assert cpu.simd_width_bits in (128, 256, 512)
    assert cpu.peak_tflops["fp32"] > 0
    assert cpu.peak_tflops["fp64"] == pytest.approx(cpu.peak_tflops["fp32"] / 2)
    assert cpu.memory_bandwidth_gbs == FAKE_MEASUREMENT["dram_gbs"]
    assert cpu.l2_mb >= 0 and cpu.l3_mb >= 0
    for figure in [f"peak_tflops.{k}" for k in cpu.peak_tflops] + ["memory_bandwidth_gbs", "cores", "l2_mb", "l3_mb"]:
        assert cpu.sources[figure], figure
    assert cpu.sources["memory_bandwidth_gbs"].startswith("measured on this host")
    assert measure_calls == [(cpu.cores, cpu.l2_mb * 1024)]


def test_cpu_peak_is_never_below_a_measured_matmul(monkeypatch):
    monkeypatch.setattr(targets.host, "_measure_host", lambda cores, l2_kb: {**FAKE_MEASUREMENT, "matmul_tflops": 1e6})
    assert targets.get_target("cpu").peak_tflops["fp32"] == 1e6


def test_cpu_peak_is_never_below_the_measured_fma_rate(monkeypatch):
    monkeypatch.setattr(targets.host, "_measure_host", lambda cores, l2_kb: {**FAKE_MEASUREMENT, "fma_tflops": 2e6})
    cpu = targets.get_target("cpu")
    assert cpu.peak_tflops["fp32"] == 2e6
    assert "independent FMAs on every core" in cpu.sources["peak_tflops.fp32"]


def test_measurements_are_cached_on_disk(tmp_path, monkeypatch, measure_calls):
    targets.get_target("cpu")
    targets.get_target("host")
    assert targets.cpu_cache_bandwidth_gbs() == FAKE_MEASUREMENT["cache_gbs"]
    assert len(measure_calls) == 1
    [cached] = (tmp_path / "home" / "cache" / "targets").glob("cpu-*.json")
    assert json.loads(cached.read_text())["dram_gbs"] == FAKE_MEASUREMENT["dram_gbs"]

    monkeypatch.setenv("AGENTKERN_HOME", str(tmp_path / "other-home"))
    targets.get_target("cpu")
    assert len(measure_calls) == 2


def test_a_corrupt_cache_is_measured_again(tmp_path, measure_calls):
    targets.get_target("cpu")
    [cached] = (tmp_path / "home" / "cache" / "targets").glob("cpu-*.json")
    cached.write_text("{not json")
    targets.get_target("cpu")
    cached.write_text('{"dram_gbs": 1.0}')  # an older layout, missing figures
    assert targets.get_target("cpu").memory_bandwidth_gbs == FAKE_MEASUREMENT["dram_gbs"]
    assert len(measure_calls) == 3


# ---- output ----


def test_summary_rows_and_json(measure_calls, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    all_targets = targets.list_targets()
    rows = targets.target_summary_rows(all_targets)
    assert [r["name"] for r in rows] == ["cpu", *GPU_NAMES]
    assert rows[0]["present"] and not any(r["present"] for r in rows[1:])
    assert rows[2]["fp16_tflops"] == 989.4 and rows[2]["units"] == "132 SMs"
    assert "cores" in rows[0]["units"] and "L3" in rows[0]["caches"]
    json.dumps([t.to_json() for t in all_targets])


def test_importing_targets_imports_neither_torch_nor_numpy():
    code = "import sys, agentkern.targets; print(sorted({'torch', 'numpy'} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("amx", [False, True])
def test_cpu_amx_tiles_raise_the_bounds_of_fp32_and_bf16(monkeypatch, amx):
    """A CPU with AMX-BF16 may run an fp32 GEMM on its tiles (three bf16 products at the least) and a bf16 one at
    the tiles' rate: the roofline must not call such a kernel faster than the hardware allows."""
    facts = targets.host._cpu_facts()
    monkeypatch.setattr(targets.host, "_cpu_facts", lambda: {**facts, "simd_bits": 512, "amx_bf16": amx})
    monkeypatch.setattr(targets.host, "_measure_host", lambda cores, l2_kb: {**FAKE_MEASUREMENT, "fma_tflops": 1.0})
    cpu = targets.get_target("cpu")
    fp32 = cpu.peak_tflops["fp32"]
    if not amx:
        assert "amx_bf16" not in cpu.peak_tflops and cpu.peak_tflops["bf16"] == 2 * fp32
        assert targets.roofline_ms(cpu, fp32 * 1e9, 0, "float32") == pytest.approx(1.0)
        return
    amx_peak = cpu.peak_tflops["amx_bf16"]
    assert amx_peak == targets.host.AMX_PER_FP32 * fp32 and cpu.peak_tflops["bf16"] == amx_peak
    assert targets.roofline_ms(cpu, fp32 * 1e9, 0, "float32") == pytest.approx(3 / targets.host.AMX_PER_FP32)
    assert targets.roofline_ms(cpu, amx_peak * 1e9, 0, "bfloat16") == pytest.approx(1.0)
    assert "AMX" in cpu.sources["peak_tflops.amx_bf16"] and "AMX" in cpu.sources["peak_tflops.bf16"]
