"""Problem sizes (SIZES = {"cpu": ..., "gpu": ...}) in the harness: a problem runs at the size its target
picks, an unknown size is a clear error, and the recogniser sees the sized shapes."""

import pytest
from bench_inputs import SIZED_PROBLEM
from support import RELU_KERNEL, fast_options, run_cli

from agentkern.errors import UserError

SHAPE_CHECKING_SOLUTION = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        if tuple(x.shape) != (8, 16):
            raise ValueError(f"got shape {tuple(x.shape)}, not the cpu size")
        return relu_kernel(x)
"""


@pytest.fixture
def sized(tmp_path):
    problem, solution = tmp_path / "sized.py", tmp_path / "sol.py"
    problem.write_text(SIZED_PROBLEM)
    solution.write_text(RELU_KERNEL + SHAPE_CHECKING_SOLUTION)
    return problem, solution


def test_a_problem_with_sizes_runs_at_the_cpu_size_on_a_cpu(sized):
    from agentkern.harness.evaluate import evaluate

    result = evaluate(*sized, "cpu", fast_options())
    assert result.status == "ok", result.error
    assert result.details["size"] == "cpu"
    gpu_sized = evaluate(*sized, "cpu", fast_options(size="gpu"))
    assert gpu_sized.status == "runtime_error" and "(64, 128)" in gpu_sized.error


def test_an_unknown_size_is_a_clear_error(sized):
    from agentkern.harness.evaluate import evaluate

    with pytest.raises(UserError, match=r"sized.py has no size 'cpu_small' \(its SIZES declare cpu, gpu\)"):
        evaluate(*sized, "cpu", fast_options(size="cpu_small"))
    proc = run_cli("eval", str(sized[0]), str(sized[1]), "--target", "cpu", "--size", "huge")
    assert proc.returncode == 2 and "sized.py has no size 'huge' (its SIZES declare cpu, gpu)" in proc.stderr


def test_the_recogniser_sees_the_sized_shapes_and_the_model_source_keeps_them(sized, tmp_path):
    from agentkern.policies.builtin.analysis import analyze_problem
    from agentkern.policies.builtin.recognize import model_source

    spec = analyze_problem(sized[0], size="cpu")
    assert spec["input_shapes"] == [[8, 16]] and spec["size"] == "cpu"
    uses_constant = tmp_path / "lin.py"
    uses_constant.write_text(
        "import torch.nn as nn\nWIDTH = 4\nclass Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(WIDTH, WIDTH)\n"
    )
    assert model_source(uses_constant, overrides={"WIDTH": 32}).rstrip().endswith("WIDTH = 32")


WIDE_MLP = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden, output_size):
        super().__init__()
        layers, width = [], input_size
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.net = nn.Sequential(*layers, nn.Linear(width, output_size))

    def forward(self, x):
        return self.net(x)


batch_size = 128
input_size = 16384
hidden_layer_sizes = [32768, 32768]
output_size = 16384


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_layer_sizes, output_size]
"""


def test_the_small_size_halves_a_networks_layer_widths_given_as_a_list(tmp_path):
    """KernelBench L3 2_ShallowWideMLP: its 32768 x 32768 weights are 4 GiB whatever the batch; only the list of
    widths brings the reference under the small size's budget."""
    from agentkern.harness.loading import load_problem_module
    from agentkern.harness.meta_work import meta_work
    from agentkern.sizes import SMALL_BYTES, SMALL_FLOPS, apply_size

    path = tmp_path / "wide.py"
    path.write_text(WIDE_MLP)
    module = load_problem_module(str(path), "wide_mlp", None, register=False)
    sized = apply_size(module, "small")
    hidden = sized["hidden_layer_sizes"]
    assert isinstance(hidden, list) and len(hidden) == 2 and hidden[0] == hidden[1] < 32768
    assert module.hidden_layer_sizes == hidden and module.input_size == sized["input_size"] < 16384
    work = meta_work(module)
    assert work["flops"] <= SMALL_FLOPS and work["bytes"] <= SMALL_BYTES
