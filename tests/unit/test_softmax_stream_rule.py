"""The softmax template's `auto` output stores: streamed past the caches only for short rows (a long row's
streamed stores run alone and are slower than plain ones draining to memory; cpp.py.j2 gives the figures)."""

import re

from agentkern.config import data_root
from agentkern.policies.builtin import templates
from agentkern.policies.builtin.recognize import analyze


def _stream_condition(stream: str) -> tuple[str, str]:
    spec = analyze(str(data_root() / "kernels_dataset" / "problems" / "softmax.py"))
    source = templates.render(spec, {"stream": stream}, "cpp")
    (line,) = re.findall(r"const bool stream = (.*);", source)
    return line, source


def test_auto_streams_only_rows_up_to_the_limit_and_always_streams_any_row():
    auto, source = _stream_condition("auto")
    assert auto == "stream_output(rows * n) && n <= STREAM_ROW_MAX"
    assert re.search(r"constexpr int64_t STREAM_ROW_MAX = (\d+);", source).group(1) == "2048"
    always, _ = _stream_condition("always")
    assert always == "stream_output(rows * n)"
