"""The kernels dataset (kernels_dataset/problems/): every problem is a valid KernelBench file with named sizes.

Each problem defines its size knobs as module globals and `SIZES = {"cpu": {...}, "gpu": {...}}`; a harness
applies a size by assigning those globals before calling get_init_inputs()/get_inputs(). Here every problem
is run at its cpu size; the gpu size is only traced on the meta device (shapes, no memory allocated).
"""

import importlib.util
import re

import pytest
import torch

from agentkern.problems import known_problems, load_problem, problem_dir

PROBLEMS = sorted(p for p in problem_dir().glob("*.py") if not p.name.startswith("_"))
LOW_PRECISION = {"float16", "bfloat16"}
GPU_BYTES_LIMIT = 4 * 2**30


def fresh_module(path, size: str | None = None):
    """A new, unregistered import of the problem file, with the globals of SIZES[size] assigned."""
    spec = importlib.util.spec_from_file_location(f"_dataset_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if size is not None:
        for name, value in module.SIZES[size].items():
            setattr(module, name, value)
    return module


def nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def test_the_dataset_has_at_least_30_uniquely_named_problems():
    names = [p.stem for p in PROBLEMS]
    assert len(names) >= 30, names
    assert len({n.lower() for n in names}) == len(names)
    assert sorted(names) == known_problems()
    bad = [n for n in names if not re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", n)]
    assert not bad, f"not snake_case: {bad}"


def test_the_original_problems_keep_their_sizes():
    expected = {
        "softmax": [(1024, 1024)],
        "matmul": [(1024, 1024), (1024, 1024)],
        "layernorm": [(1024, 1024)],
        "relu": [(1024, 1024)],
        "sum_rows": [(1024, 1024)],
    }
    for name, shapes in expected.items():
        module = fresh_module(problem_dir() / f"{name}.py")
        assert [tuple(t.shape) for t in module.get_inputs()] == shapes


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_problem_loads_and_declares_its_sizes(path):
    assert load_problem(path.stem).path == path.resolve()
    module = fresh_module(path)
    doc = module.__doc__ or ""
    assert "family" in doc and "Sizes" in doc, "the docstring says what it computes, its template family and sizes"
    sizes = getattr(module, "SIZES", None)
    assert isinstance(sizes, dict) and {"cpu", "gpu"} <= set(sizes), "SIZES needs 'cpu' and 'gpu'"
    for size in ("cpu", "gpu"):
        assert sizes[size], f"SIZES[{size!r}] is empty"
        for name, value in sizes[size].items():
            assert hasattr(module, name), f"SIZES[{size!r}] names {name!r}, which is not a module global"
            assert isinstance(value, int) and value > 0, (size, name, value)
    assert sizes["cpu"].keys() == sizes["gpu"].keys()
    # The module's defaults are the cpu sizes.
    assert {name: getattr(module, name) for name in sizes["cpu"]} == sizes["cpu"]


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_problem_runs_at_its_cpu_size(path):
    module = fresh_module(path, "cpu")
    torch.manual_seed(42)
    model = module.Model(*module.get_init_inputs()).eval()
    inputs = module.get_inputs()
    assert inputs and all(isinstance(t, torch.Tensor) and t.device.type == "cpu" for t in inputs)
    dtypes = {str(t.dtype).removeprefix("torch.") for t in inputs}
    low_precision_problem = "fp16" in path.stem or "bf16" in path.stem
    assert dtypes == {"float32"} or (low_precision_problem and dtypes <= LOW_PRECISION), dtypes
    with torch.no_grad():
        out = model(*inputs)
    assert isinstance(out, torch.Tensor) and out.numel() > 0
    assert torch.isfinite(out.float()).all()


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_problem_gpu_size_is_applied_and_fits(path):
    """The gpu size, traced on the meta device: shapes only, nothing allocated."""
    cpu = fresh_module(path, "cpu")
    with torch.device("meta"):
        cpu_inputs = cpu.get_inputs()
    gpu = fresh_module(path, "gpu")
    with torch.device("meta"):
        model = gpu.Model(*gpu.get_init_inputs())
        inputs = gpu.get_inputs()
        out = model(*inputs)
    assert all(t.device.type == "meta" for t in inputs)
    assert [t.dtype for t in inputs] == [t.dtype for t in cpu_inputs]
    # get_inputs() reads the size globals when called: the gpu size gives more work than the cpu size ...
    assert sum(t.numel() for t in inputs) > sum(t.numel() for t in cpu_inputs), "get_inputs() ignores the sizes"
    # ... within a few GiB (inputs, output and parameters together).
    total = nbytes(inputs) + nbytes([out]) + nbytes(list(model.parameters()))
    assert total < GPU_BYTES_LIMIT, f"{total / 2**30:.2f} GiB at the gpu size"
