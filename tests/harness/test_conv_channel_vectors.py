"""The graph family's channel-vector convolution (conv.cpp.j2 conv3d_channel_vectors: output channels in the
vector lanes, only products of x's own values) against a plain convolution summing in double, on configurations
the implicit GEMM's tests do not reach one by one: random strides, paddings (negative too: a transposed
convolution's stride phases start inside x), dilations, groups, output sizes past the natural one, channel
counts off the vector width, rows wider than a tile; at the host's width and at AVX2's. The kernel source is
rendered from the templates and compiled into a small driver (conv_channel_vectors_driver.cpp)."""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from agentkern import cpu_isa
from agentkern.policies.builtin import templates
from agentkern.policies.builtin.recognize import analyze

DRIVER = Path(__file__).with_name("conv_channel_vectors_driver.cpp")

PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(4, 16, 3, stride=(1, 2))  # a stride along W: its tiles compiled in too

    def forward(self, x):
        return self.c(x)

def get_inputs():
    return [torch.randn(1, 4, 8, 8)]

def get_init_inputs():
    return []
"""

# (N, C, D, H, W, OC, KD, KH, KW, OD, OH, OW, sd, sh, sw, pd, ph, pw, dd, dh, dw, G, bias)
EDGES = [
    # a transposed 3-D convolution at stride 1 as the phase conv.cpp.j2 makes of it: framed by K - 1 zeros a side
    (2, 5, 4, 5, 9, 16, 3, 5, 7, 6, 9, 15, 1, 1, 1, 2, 4, 6, 1, 1, 1, 1, 1),
    # a stride phase starting inside x (negative padding), its output past the natural size
    (1, 3, 1, 6, 11, 17, 1, 2, 3, 1, 6, 13, 1, 1, 1, 0, -1, -2, 1, 1, 1, 1, 0),
    # rows wider than a tile (28 positions at AVX-512, 12 at AVX2), strided and dilated, two groups of 20
    (1, 6, 1, 3, 97, 40, 1, 2, 5, 1, 2, 31, 1, 1, 3, 0, 0, 2, 1, 1, 2, 2, 1),
    # 3 x 3 with padding 1: the row's interior through all taps at once, its two ends a tap at a time
    (2, 7, 1, 9, 30, 16, 1, 3, 3, 1, 9, 30, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1),
    # a 1-D convolution reading past neither end, every row through one tile
    (3, 4, 1, 1, 50, 8, 1, 1, 4, 1, 1, 47, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0),
    # taps that read nothing at all for some rows and columns (padding beyond the kernel's reach)
    (1, 2, 2, 3, 4, 16, 2, 2, 2, 5, 7, 9, 1, 1, 1, 2, 3, 4, 1, 1, 1, 1, 1),
]


def _random_configs(count: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    configs = []
    for _ in range(count):
        dims = rng.choice([1, 2, 3])
        groups, cg, ocg = rng.choice([1, 1, 2, 3]), rng.randint(1, 5), rng.choice([1, 3, 8, 15, 16, 17, 24, 33])
        kernel = [1] * (3 - dims) + [rng.randint(1, 7) for _ in range(dims)]
        stride = [1] * (3 - dims) + [rng.choice([1, 1, 2, 3, 4]) for _ in range(dims)]
        dilation = [1] * (3 - dims) + [rng.choice([1, 1, 2, 3]) for _ in range(dims)]
        padding = [0] * (3 - dims) + [rng.randint(-2, 4) for _ in range(dims)]
        size = [1] * (3 - dims) + [rng.randint(1, 9) for _ in range(dims - 1)] + [rng.choice([1, 5, 13, 31, 60])]
        out = [
            max(
                1,
                (size[e] + 2 * padding[e] - dilation[e] * (kernel[e] - 1) - 1) // stride[e]
                + 1
                + rng.choice([0, 0, 1, 2]),
            )
            for e in range(3)
        ]
        configs.append(
            (rng.randint(1, 2), groups * cg, *size, groups * ocg, *kernel, *out, *stride, *padding, *dilation, groups)
            + (rng.randint(0, 1),)
        )
    return configs


def _driver(tmp_path: Path, simd: str) -> Path:
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    host = cpu_isa.cpu_flags()
    if simd == "avx512" and not {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= host:
        pytest.skip("the host has no AVX-512")
    if simd == "avx2" and not {"avx2", "fma"} <= host:
        pytest.skip("the host has no AVX2")
    problem = tmp_path / "conv.py"
    problem.write_text(PROBLEM)
    rendered = templates.render(analyze(str(problem)), {"simd": simd, "schedule": "static", "gemm_kc": 256}, "cpp")
    (source,) = re.findall(r'CPP_SOURCE = r"""(.*?)"""', rendered, re.S)
    (tmp_path / "kernel.cpp").write_text(source)
    binary = tmp_path / f"driver_{simd}"
    march = "-march=native" if simd == "avx512" else "-march=x86-64-v3"
    built = subprocess.run(
        [
            "g++",
            "-O2",
            march,
            "-fopenmp",
            "-std=c++17",
            f"-I{tmp_path}",
            '-DKERNEL_SOURCE="kernel.cpp"',
            str(DRIVER),
            "-o",
            str(binary),
        ],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return binary


def _run(binary: Path, configs: list[tuple]) -> list[str]:
    stdin = "\n".join(" ".join(map(str, c)) for c in configs) + "\n"
    lines = subprocess.run([str(binary)], input=stdin, capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(lines) == len(configs)
    return lines


@pytest.mark.parametrize("simd", ["avx512", "avx2"])
def test_channel_vectors_compute_the_convolution(tmp_path, simd):
    configs = EDGES + _random_configs(150, seed=7)
    lines = _run(_driver(tmp_path, simd), configs)
    bad = [(c, line) for c, line in zip(configs, lines) if not line.startswith("ok ")]
    assert not bad, bad[:5]


# The shapes whose measured times set cv_wins (conv.cpp.j2), KernelBench level 1 and 2 at --size small.
PICKS = [
    # L1 58's transposed convolution as its stride-1 phase: rows of 22 of which 16 read x: channel vectors
    ((16, 16, 16, 16, 16, 16, 3, 5, 7, 18, 20, 22, 1, 1, 1, 2, 4, 6, 1, 1, 1, 1, 0), True, True),
    # L1 76, a strided dilated 1-D convolution (the GEMM would pack): channel vectors
    ((16, 16, 1, 1, 16383, 16, 1, 1, 3, 1, 1, 5459, 1, 1, 3, 0, 0, 0, 1, 1, 4, 1, 0), True, True),
    # L1 50, strided with 96 output channels: the GEMM packs once for 96 rows; channel vectors at AVX-512 only
    ((16, 3, 1, 224, 224, 96, 1, 11, 11, 1, 55, 55, 1, 4, 4, 0, 2, 2, 1, 1, 1, 1, 1), True, False),
    # L2 21 / 57 / 67: 3 x 3 on rows of 30 (a GEMM panel nearly full): the GEMM
    ((16, 8, 1, 32, 32, 16, 1, 3, 3, 1, 30, 30, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1), False, False),
    # four output channels a group: a vector a quarter used, 2.3x (AVX-512) and 1.6x (AVX2) the GEMM's time
    ((8, 16, 1, 24, 24, 16, 1, 3, 4, 1, 22, 21, 1, 1, 1, 0, 0, 0, 1, 1, 1, 4, 0), False, False),
    # the same strided along W: the GEMM packs columns for four rows; channel vectors 0.34x and 0.39x its time
    ((8, 16, 1, 32, 32, 16, 1, 3, 5, 1, 30, 14, 1, 1, 2, 0, 0, 0, 1, 1, 1, 4, 0), True, True),
]


@pytest.mark.parametrize("simd", ["avx512", "avx2"])
def test_the_convolution_takes_the_channel_vectors_where_they_measured_faster(tmp_path, simd):
    # the driver runs every configuration too, so keep the big ones out of it: only cv_wins is read here
    small = [(2, *c[1:]) if c[0] > 2 else c for c, _, _ in PICKS]
    lines = _run(_driver(tmp_path, simd), small)
    wins = [line.endswith("wins 1") for line in lines]
    assert wins == [at512 if simd == "avx512" else at2 for _, at512, at2 in PICKS]
