"""The load_inline path for C++ kernels (slow: the first build compiles against torch's headers)."""

import pytest
from support import fast_options

RELU_LOAD_INLINE = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = """
#include <torch/extension.h>
torch::Tensor relu_out(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    #pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
    return y;
}
"""
ext = load_inline(name="agentkern_test_relu", cpp_sources=CPP, functions=["relu_out"],
                  extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_out(x)
'''


@pytest.mark.slow
def test_load_inline_cpp_kernel_builds_once_and_is_timed(tmp_path):
    from agentkern.harness.evaluate import evaluate

    path = tmp_path / "relu_load_inline.py"
    path.write_text(RELU_LOAD_INLINE)
    first = evaluate("relu", path, "cpu", fast_options())
    assert first.status == "ok", first.error
    assert first.details["backend"] == "cpp" and first.kernel_ms > 0
    again = evaluate("relu", path, "cpu", fast_options())
    assert again.status == "ok", again.error
    # torch's extension cache under AGENTKERN_HOME: the unchanged kernel is not rebuilt.
    assert again.details["phases"]["compile_s"] < first.details["phases"]["compile_s"] / 3
