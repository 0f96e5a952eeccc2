"""Which loops of the graph family's kernels follow the searched OpenMP schedule and which are always static."""

import re

import torch

from agentkern.policies.builtin import templates
from agentkern.policies.builtin.graph_trace import trace_graph


class _ConvLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.linear = torch.nn.Linear(6, 5)

    def forward(self, x):
        return self.linear(self.conv(x))


def _source(schedule: str) -> str:
    torch.manual_seed(0)
    model, inputs = _ConvLinear().eval(), [torch.randn(2, 3, 8, 8)]
    spec = {
        "family": "graph",
        "dtype": "float32",
        "input_shapes": [list(t.shape) for t in inputs],
        "output_shape": None,
        "attrs": {"graph": trace_graph(model, inputs)},
        "epilogue": [],
        "model_source": "",
    }
    return templates.render(spec, {"simd": "avx2", "schedule": schedule, "gemm_kc": 256}, "cpp")


def _pragma_before(source: str, loop: str) -> str:
    return re.search(r"#pragma omp for ([^\n]*)\n\s*" + re.escape(loop), source).group(1)


def test_a_convolutions_blocks_are_split_statically_whatever_the_schedule_and_the_gemms_follow_it():
    # Static keeps each block of the output in the cache of the core that wrote it last call (conv.cpp.j2)
    for schedule in ("dynamic", "static"):
        source = _source(schedule)
        assert _pragma_before(source, "for (int64_t job = 0;") == "schedule(static)"
        assert _pragma_before(source, "for (int64_t ib = 0; ib < mblocks; ++ib)") == f"collapse(2) schedule({schedule})"
