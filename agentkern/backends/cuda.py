"""CUDA C++ through torch's load_inline(cuda_sources=...). Without the GPU a solution is compiled to a cubin
for the target's architecture (nvcc -cubin, agentkern/harness/modes/ptx.py: its resources read, a kernel that
could not launch there refused) and never run: the verdict is "unverified"."""

from agentkern.backends.base import Backend

BACKEND = Backend(
    name="cuda",
    device_kind="gpu",
    display="CUDA",
    prompt="coder_cuda",
    priority=10,  # first: a CUDA file holds C++ markers too (cpp_sources)
    markers=(r"cuda_sources", r"__global__"),
    cache_env={"TORCH_EXTENSIONS_DIR": "torch_extensions"},
    without_hardware="ptx",
    compile_error_messages=("Error building extension",),  # torch's load_inline
    wrong_target="the cuda backend writes GPU kernels: choose a GPU target (e.g. --target h100)",
    wrong_target_solution="this solution is a CUDA kernel: choose a GPU target (e.g. --target h100)",
)
