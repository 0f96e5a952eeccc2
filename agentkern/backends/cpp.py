"""C++ with OpenMP for this host's CPU: agentkern.native.compile_cpp (-O3 -march=native -fopenmp, loaded
through ctypes) or torch's load_inline(cpp_sources=...)."""

from agentkern.backends.base import Backend

BACKEND = Backend(
    name="cpp",
    device_kind="cpu",
    display="C++",
    prompt="coder_cpp",
    priority=30,  # last: CUDA files hold cpp_sources too
    markers=(r"compile_cpp", r"compile_with_ops", r"cpp_sources", r'extern "C"'),
    default=True,
    cache_env={"AGENTKERN_CPP_CACHE": "cpp", "TORCH_EXTENSIONS_DIR": "torch_extensions"},
    without_hardware="none",  # its hardware, the CPU, is always here
    compile_error_types=("CompileError",),  # agentkern.native.compile_cpp
    compile_error_messages=("Error building extension",),  # torch's load_inline
    wrong_target="the cpp backend writes CPU kernels: use --target cpu",
    wrong_target_solution="C++ kernels run on the CPU: use --target cpu, not {target}",
)
