"""A scripted model's replies around a C++ relu kernel (OpenMP, built by agentkern.native): one that is right,
one that is wrong, one that does not build, one that is not Python, one that hangs, and one without code."""

RELU_CPP = '''
import ctypes
import torch
import torch.nn as nn
from agentkern.native import compile_cpp, ptr

CPP_SOURCE = r"""
extern "C" void relu(const float* x, float* y, long n) {
    #pragma omp parallel for
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : %(negative)s;
}
"""
lib = compile_cpp(CPP_SOURCE, name="relu")
lib.relu.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]

class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(ptr(x), ptr(y), x.numel())
        return y
'''


def block(code):
    return f"Here is the kernel.\n```python\n{code}\n```\n"


GOOD = block(RELU_CPP % {"negative": "0.f"})
WRONG = block(RELU_CPP % {"negative": "0.5f * x[i]"})
COMPILE_ERROR = block(RELU_CPP % {"negative": "0.f; undeclared_name += 1"})
SYNTAX_ERROR = block("import torch\nclass ModelNew(torch.nn.Module:\n    pass\n")
NO_CODE = "I would vectorise the loop with AVX2 and use non-temporal stores."
HANG = block(
    "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        while True:\n            pass\n"
)
