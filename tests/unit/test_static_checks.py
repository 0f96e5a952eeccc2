import ast

import pytest

from agentkern.harness.rejections import Rejected
from agentkern.harness.static_checks import check_source, detect_backend


def _check(src: str):
    check_source(src, ast.parse(src))


@pytest.mark.parametrize(
    "src, backend",
    [
        ("from agentkern.native import compile_cpp\n", "cpp"),
        ("import triton\nimport triton.language as tl\n", "triton"),
        (
            "from torch.utils.cpp_extension import load_inline\nload_inline('m', cpp_sources='', cuda_sources='')\n",
            "cuda",
        ),
        ("import torch\n", "torch"),
    ],
)
def test_backend_is_chosen_by_content(src, backend):
    assert detect_backend(src) == backend


@pytest.mark.parametrize(
    "src, code",
    [
        ("import gc\n", "reads_harness"),
        ("import sys\nf = sys._getframe(1)\n", "reads_harness"),
        ("import sys\nm = sys.modules['x']\n", "reads_harness"),
        ("import subprocess\n", "forbidden_call"),
        ("import os\nos.system('true')\n", "forbidden_call"),
        ("import threading\n", "background_work"),
        ("import time\ntime.perf_counter = lambda: 0\n", "patches_runtime"),
        ("import torch as T\nT.allclose = lambda *a, **k: True\n", "patches_runtime"),
        ("import torch\nsetattr(torch.Tensor, '__eq__', None)\n", "patches_runtime"),
        ("import torch\ns = torch.cuda.Stream()\n", "side_stream"),
        ("SRC = 'void f() { std::thread t(g); t.detach(); }'\n", "background_work"),
        ("eval('1')\n", "forbidden_call"),
    ],
)
def test_forbidden_constructs_are_rejected_with_their_reason(src, code):
    with pytest.raises(Rejected) as info:
        _check(src)
    assert info.value.code == code


@pytest.mark.parametrize(
    "src",
    [
        "import torch\ny = x.detach().clone()\n",
        "import os\nn = os.cpu_count()\n",
        "import torch\nt = torch.empty(3)\nt.stream = 1\n",  # attribute on a tensor, not on torch
        "from agentkern.native import compile_cpp, ptr\nlib = compile_cpp('extern \"C\" void f(){}')\n",
    ],
)
def test_honest_code_passes(src):
    _check(src)


def test_python_is_parsed_one_thread_at_a_time(monkeypatch):
    """CPython 3.11's AST constructor is not safe with two threads parsing at once (a bench run with two
    problems in flight failed with "AST constructor recursion depth mismatch"): agentkern parses through
    helpers.parse_python, which lets one thread in at a time, and nowhere calls ast.parse itself."""
    import ast
    import re
    import threading
    import time
    from pathlib import Path

    from agentkern import helpers

    inside, most = [0], [0]
    real_parse = ast.parse

    def slow_parse(*args, **kwargs):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.01)
        inside[0] -= 1
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", slow_parse)
    threads = [threading.Thread(target=lambda: [helpers.parse_python("x = 1") for _ in range(5)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1
    package = Path(helpers.__file__).parent
    callers = [
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if p.name != "helpers.py" and re.search(r"\bast\.parse\(", p.read_text())
    ]
    assert callers == []
