"""A candidate cannot plant a library that another candidate loads (issue 14: poisoning the shared build
cache). The poisoner writes a "ReLU" that returns zeros under the cache key of an honest kernel's exact
source, in every cache folder it can reach; the honest kernel evaluated next must still be correct."""

from support import ROOT, fast_options

from agentkern.harness.evaluate import evaluate

HONEST = ROOT / "kernels_dataset" / "solutions" / "relu_cpp.py"

POISONER = '''
import os
import re

import torch
import torch.nn as nn

from agentkern import native

HONEST_SOURCE = {source!r}
BAD = native.compile_cpp(r"""extern "C" void relu(const float* x, float* y, long n) {{ for (long i = 0; i < n; ++i) y[i] = 0.0f; }}""")
kernel = re.search(r'r"""(.*?)"""', HONEST_SOURCE, re.S).group(1)
for root in {{os.environ.get("AGENTKERN_CPP_CACHE", ""), os.path.expanduser("~/.agentkern/cache/cpp"),
             os.path.join(os.environ.get("AGENTKERN_HOME", "/nonexistent"), "cache", "cpp")}}:
    try:
        os.environ["AGENTKERN_CPP_CACHE"] = root
        target = native.library_path(kernel)
        os.makedirs(target.parent, exist_ok=True)
        with open(BAD._name, "rb") as src, open(target, "wb") as dst:
            dst.write(src.read())
    except OSError:
        pass


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)
'''


def test_a_library_planted_under_another_kernels_key_is_never_loaded(tmp_path):
    poisoner = tmp_path / "poisoner.py"
    poisoner.write_text(POISONER.format(source=HONEST.read_text()))
    planted = evaluate("relu", poisoner, "cpu", fast_options())
    assert planted.status == "incorrect", planted.error  # it ran (not refused by a static check), and planted
    honest = evaluate("relu", HONEST, "cpu", fast_options())
    assert honest.status == "ok", honest.error
