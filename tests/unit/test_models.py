"""The model layer: extract_solution, ScriptedModel, Usage, get_model, and LiteLLMModel against a real
OpenAI-compatible HTTP server on 127.0.0.1 (tests/fake_openai_server.py). litellm itself is never patched:
these tests exercise its real HTTP client, error mapping and response parsing."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from fake_openai_server import FakeOpenAIServer, error, ok, raw
from support import ROOT

from agentkern.errors import UserError
from agentkern.models import (
    ChatModel,
    LiteLLMModel,
    ModelError,
    NoCodeError,
    Reply,
    ScriptedModel,
    Usage,
    extract_solution,
    get_model,
)
from agentkern.models.litellm_model import DUMMY_API_KEY

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:pydantic")  # raised by importing litellm

MESSAGES = [
    {"role": "system", "content": "You write fast kernels."},
    {"role": "user", "content": "Write a softmax."},
]

SOLUTION = """\
import torch

class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
"""


# ---------------------------------------------------------------- extract_solution


def fenced(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code}```\n"


def test_extract_solution_takes_the_python_block():
    text = "Here is my plan.\n\n" + fenced(SOLUTION) + "\nThis should be 2x faster."
    assert extract_solution(text) == SOLUTION


def test_extract_solution_takes_the_last_block_defining_modelnew():
    first = SOLUTION.replace("dim=-1", "dim=1")
    text = "Draft:\n" + fenced(first) + "Better:\n" + fenced(SOLUTION) + "Usage:\n" + fenced("m = ModelNew()\n")
    assert extract_solution(text) == SOLUTION


def test_extract_solution_accepts_unlabeled_and_indented_blocks():
    assert extract_solution("Solution:\n" + fenced(SOLUTION, lang="")) == SOLUTION
    indented = "1. The code:\n\n" + "\n".join("   " + line for line in fenced(SOLUTION).splitlines()) + "\n"
    assert extract_solution(indented) == SOLUTION


def test_extract_solution_ignores_other_languages_and_thinking():
    cpp = fenced('// class ModelNew\nextern "C" void k() {}\n', lang="cpp")
    thinking = "<think>\n```python\nclass ModelNew: broken(\n```\n</think>\n"
    assert extract_solution(thinking + cpp + fenced(SOLUTION)) == SOLUTION


def test_extract_solution_accepts_a_bare_python_reply():
    assert extract_solution(SOLUTION) == SOLUTION


@pytest.mark.parametrize(
    "text, reason",
    [
        ("I would tile the matmul into 64x64 blocks and use shared memory.", "no code block"),
        ("", "no code block"),
        (fenced("import torch\n\nclass Model(torch.nn.Module):\n    pass\n"), "does not define `class ModelNew`"),
        (fenced('extern "C" void k() {}\n', lang="cpp"), "no Python code block (found only: cpp)"),
        (
            "Here:\n```python\nimport torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n",
            "truncated reply",
        ),
        (fenced(SOLUTION.replace("return torch.softmax(x, dim=-1)", "return torch.softmax(x, dim=-1")), "line 5"),
        (fenced(SOLUTION.replace("def forward", "def forward(")), "not valid Python"),
    ],
    ids=["prose", "empty", "no-modelnew", "only-cpp", "truncated", "syntax-error-line", "syntax-error"],
)
def test_extract_solution_says_why_in_one_line(text, reason):
    with pytest.raises(NoCodeError) as info:
        extract_solution(text)
    message = str(info.value)
    assert reason in message
    assert "\n" not in message
    assert isinstance(info.value, ValueError)


def test_extract_solution_truncated_block_after_a_complete_one():
    # a complete solution followed by a cut-off second attempt at it: the reply is truncated
    text = fenced(SOLUTION) + "Faster version:\n```python\nclass ModelNew(torch.nn.Module):\n    def forw"
    with pytest.raises(NoCodeError, match="truncated reply: the code block opened on line 9"):
        extract_solution(text)
    # ... but a cut-off trailing example that is no solution does not hide the complete one
    assert extract_solution(fenced(SOLUTION) + "Usage:\n```python\nm = Mod") == SOLUTION


# ---------------------------------------------------------------- ScriptedModel, Usage


def test_scripted_model_plays_its_script_in_order():
    def echo(messages):
        return f"you said {messages[-1]['content']!r}"

    fixed = Reply(
        text="fixed",
        model="m",
        prompt_tokens=1,
        completion_tokens=2,
        cost_usd=0.5,
        latency_s=0.1,
        attempts=2,
        finish_reason="length",
    )
    model = ScriptedModel(["x" * 40, echo, fixed, ModelError("scripted model: provider down")])
    assert isinstance(model, ChatModel)
    assert model.name == "scripted"

    first = model.complete(MESSAGES, temperature=0.7)
    assert (first.text, first.model, first.completion_tokens, first.attempts) == ("x" * 40, "scripted", 10, 1)
    assert first.prompt_tokens == sum(len(m["content"]) for m in MESSAGES) // 4
    assert first.cost_usd == 0.0 and first.finish_reason == "stop"
    assert model.complete(MESSAGES).text == "you said 'Write a softmax.'"
    assert model.complete(MESSAGES) is fixed
    with pytest.raises(ModelError, match="provider down"):
        model.complete(MESSAGES)
    with pytest.raises(ModelError, match="^scripted model: no replies left$"):
        model.complete(MESSAGES)
    assert model.history == [MESSAGES] * 5
    assert model.calls[0] == {"temperature": 0.7, "max_tokens": 4096}


def test_scripted_model_history_is_a_copy():
    model = ScriptedModel(["a"])
    messages = [{"role": "user", "content": "before"}]
    model.complete(messages)
    messages[0]["content"] = "after"
    assert model.history == [[{"role": "user", "content": "before"}]]


def test_usage_adds_replies():
    usage = Usage()
    usage.add(Reply("a", "m", prompt_tokens=10, completion_tokens=5, cost_usd=0.25))
    usage.add(Reply("b", "m", prompt_tokens=1, completion_tokens=2, cost_usd=0.5))
    assert (usage.tokens_in, usage.tokens_out, usage.calls, usage.tokens) == (11, 7, 2, 18)
    assert usage.cost_usd == pytest.approx(0.75)


# ---------------------------------------------------------------- get_model


def test_get_model_builtin_is_none():
    assert get_model(None) is None
    assert get_model("builtin") is None
    assert get_model(" Builtin ") is None
    assert get_model("") is None


def test_get_model_refuses_scripted():
    with pytest.raises(UserError, match="tests only"):
        get_model("scripted")


def test_get_model_prefixes_openai_for_an_api_base():
    base = "http://127.0.0.1:8000/v1"
    assert get_model("qwen2.5-coder", api_base=base).name == "openai/qwen2.5-coder"
    assert get_model("meta-llama/Llama-3.1-8B", api_base=base).name == "openai/meta-llama/Llama-3.1-8B"
    assert get_model("ollama/llama3", api_base="http://127.0.0.1:11434").name == "ollama/llama3"
    assert get_model("openai/gpt-4o-mini", api_base=base).name == "openai/gpt-4o-mini"
    hosted = get_model("gpt-4o")
    assert isinstance(hosted, LiteLLMModel) and hosted.name == "gpt-4o" and hosted.api_base is None


def test_dummy_key_only_for_openai_compatible_servers_without_one(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert LiteLLMModel("openai/m", api_base="http://127.0.0.1:1/v1").api_key == DUMMY_API_KEY
    assert LiteLLMModel("openai/m", api_base="http://127.0.0.1:1/v1", api_key="k").api_key == "k"
    assert LiteLLMModel("openai/m").api_key is None  # hosted OpenAI: litellm reads OPENAI_API_KEY
    assert LiteLLMModel("anthropic/claude-x", api_base="http://127.0.0.1:1").api_key is None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    assert LiteLLMModel("openai/m", api_base="http://127.0.0.1:1/v1").api_key is None


def test_importing_the_model_layer_does_not_import_litellm():
    code = "import sys, agentkern.models; assert 'litellm' not in sys.modules, 'litellm imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


# ---------------------------------------------------------------- LiteLLMModel against a real HTTP server


@pytest.fixture(autouse=True)
def _loopback_without_proxy(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


class Sleeps(list):
    """An injected sleep: records the waits instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def local_model(server: FakeOpenAIServer, **kwargs) -> LiteLLMModel:
    options = {"max_retries": 3, "backoff_s": 0.01, "timeout_s": 10.0}
    options.update(kwargs)
    return LiteLLMModel("openai/test-model", api_base=server.base_url, **options)


def assert_one_line(error: ModelError) -> str:
    message = str(error)
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith("openai/test-model: ")
    return message


def test_a_normal_reply():
    with FakeOpenAIServer(
        [ok("```python\nclass ModelNew: pass\n```", prompt_tokens=42, completion_tokens=9)]
    ) as server:
        reply = local_model(server).complete(MESSAGES, temperature=0.3, max_tokens=321)
    assert reply.text == "```python\nclass ModelNew: pass\n```"
    assert (reply.prompt_tokens, reply.completion_tokens) == (42, 9)
    assert reply.model == "openai/test-model"
    assert reply.attempts == 1 and reply.latency_s > 0 and reply.finish_reason == "stop"
    assert reply.cost_usd == 0.0  # a model litellm has no price for
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "test-model"  # litellm strips the "openai/" prefix
    assert request["body"]["messages"] == MESSAGES
    assert request["body"]["temperature"] == 0.3 and request["body"]["max_tokens"] == 321
    assert request["headers"]["Authorization"] == f"Bearer {DUMMY_API_KEY}"


def test_a_known_model_is_priced_from_the_local_cost_map():
    with FakeOpenAIServer([ok("hi", prompt_tokens=1_000_000, completion_tokens=0, model="gpt-4o")]) as server:
        reply = LiteLLMModel("openai/gpt-4o", api_base=server.base_url).complete(MESSAGES)
    assert 0.5 < reply.cost_usd < 50  # gpt-4o input is priced in dollars per million tokens


def test_parameters_a_model_refuses_are_dropped_not_fatal():
    # o-series models take only temperature=1; litellm refuses the call unless told to drop the parameter
    with FakeOpenAIServer([ok("hi", model="o3-mini")]) as server:
        reply = LiteLLMModel("openai/o3-mini", api_base=server.base_url).complete(MESSAGES, temperature=0.2)
    assert reply.text == "hi"
    assert "temperature" not in server.requests[0]["body"]
    assert reply.cost_usd > 0  # priced from litellm's local cost map


def test_a_reply_without_usage_or_content():
    with FakeOpenAIServer([ok("hi", usage=False), ok(None, finish_reason="length")]) as server:
        model = local_model(server)
        first, second = model.complete(MESSAGES), model.complete(MESSAGES)
    assert (first.text, first.prompt_tokens, first.completion_tokens) == ("hi", 0, 0)
    assert (second.text, second.finish_reason) == ("", "length")


def test_a_rate_limit_is_retried():
    sleeps = Sleeps()
    with FakeOpenAIServer([error(429, "slow down"), ok("done")]) as server:
        reply = local_model(server, sleep=sleeps).complete(MESSAGES)
    assert reply.text == "done" and reply.attempts == 2
    assert len(server.requests) == 2
    assert len(sleeps) == 1 and 0.01 <= sleeps[0] <= 0.0125  # backoff_s plus at most 25% jitter


def test_backoff_is_exponential_with_jitter_and_capped():
    model = LiteLLMModel("openai/m", backoff_s=1.0, max_backoff_s=5.0)
    first = [model._delay(1, None) for _ in range(20)]
    assert all(1.0 <= d <= 1.25 for d in first) and len(set(first)) > 1  # jittered
    assert all(2.0 <= model._delay(2, None) <= 2.5 for _ in range(20))
    assert all(5.0 <= model._delay(10, None) <= 6.25 for _ in range(20))  # capped
    assert model._delay(1, 4.0) == 4.0  # never shorter than the server's Retry-After


def test_retry_after_is_honoured():
    sleeps = Sleeps()
    script = [error(429, headers={"Retry-After": "2"}), error(503, headers={"retry-after-ms": "1500"}), ok("done")]
    with FakeOpenAIServer(script) as server:
        reply = local_model(server, sleep=sleeps).complete(MESSAGES)
    assert reply.attempts == 3 and len(server.requests) == 3
    assert sleeps == [2.0, 1.5]


def test_a_retry_after_beyond_the_cap_ends_the_call():
    with FakeOpenAIServer([error(429, "quota", headers={"Retry-After": "3600"}), ok()]) as server:
        with pytest.raises(ModelError) as info:
            local_model(server, max_backoff_s=30, sleep=Sleeps()).complete(MESSAGES)
    assert "HTTP 429" in str(info.value) and "wait 3600s" in assert_one_line(info.value)
    assert len(server.requests) == 1


def test_a_server_error_every_time_gives_up_after_max_retries():
    sleeps = Sleeps()
    with FakeOpenAIServer([error(500, "upstream\nexploded")]) as server:
        with pytest.raises(ModelError) as info:
            local_model(server, sleep=sleeps).complete(MESSAGES)
    message = assert_one_line(info.value)
    assert message == "openai/test-model: HTTP 500 after 3 attempts: upstream exploded"
    assert (info.value.status, info.value.attempts, info.value.kind, info.value.retryable) == (500, 3, "http", True)
    assert len(server.requests) == 3
    assert len(sleeps) == 2 and sleeps[0] < sleeps[1]  # exponential: 0.01-0.0125, then 0.02-0.025


def test_other_5xx_are_retried():
    with FakeOpenAIServer(
        [raw(502, "<html>bad gateway</html>", content_type="text/html"), error(503), ok("up")]
    ) as server:
        reply = local_model(server, sleep=Sleeps()).complete(MESSAGES)
    assert reply.text == "up" and reply.attempts == 3 and len(server.requests) == 3


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"<html>hello</html>",
        b'{"foo": 1}',
        b'{"id": "x", "object": "chat.completion", "choices": []}',
        b'{"choices": [5]}',
        b"[]",
    ],
    ids=["not-json", "html", "no-choices-key", "empty-choices", "bad-choice", "not-an-object"],
)
def test_a_malformed_response_is_not_retried(body):
    with FakeOpenAIServer([raw(200, body)]) as server:
        with pytest.raises(ModelError) as info:
            local_model(server, sleep=Sleeps()).complete(MESSAGES)
    message = assert_one_line(info.value)
    assert "malformed response from the server" in message
    if body in (b"{not json", b"<html>hello</html>"):
        assert "not JSON" in message and repr(body.decode()[:10])[:-1] in message  # quotes the body
    assert info.value.kind == "malformed" and not info.value.retryable
    assert len(server.requests) == 1


def test_anthropic_errors_are_classified_by_cause_not_by_litellm_type():
    """litellm 1.106.2 reports a non-JSON body from anthropic/ as a 500 carrying the real response's
    headers: only the JSONDecodeError in the exception chain shows it is not worth retrying."""
    with FakeOpenAIServer([raw(200, b"{not json")]) as server:
        model = LiteLLMModel(
            "anthropic/claude-test",
            api_base=f"http://127.0.0.1:{server.port}",
            api_key="k",
            backoff_s=0.01,
            sleep=Sleeps(),
        )
        with pytest.raises(ModelError, match="anthropic/claude-test: malformed response from the server: not JSON"):
            model.complete(MESSAGES)
    assert [r["path"] for r in server.requests] == ["/v1/messages"]
    with FakeOpenAIServer([error(529, "overloaded")]) as server:
        model = LiteLLMModel(
            "anthropic/claude-test",
            api_base=f"http://127.0.0.1:{server.port}",
            api_key="k",
            backoff_s=0.01,
            sleep=Sleeps(),
        )
        with pytest.raises(ModelError, match="^anthropic/claude-test: HTTP 529 after 3 attempts: overloaded$"):
            model.complete(MESSAGES)
    assert len(server.requests) == 3


def test_a_missing_key_is_reported_as_such_and_not_retried(monkeypatch):
    # litellm raises this as an InternalServerError (500) before any request is made
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAIServer([ok()]) as server:
        model = local_model(server, sleep=Sleeps())
        model.api_key = None
        with pytest.raises(ModelError) as info:
            model.complete(MESSAGES)
    message = assert_one_line(info.value)
    assert "Missing credentials" in message and "malformed" not in message and "500" not in message
    assert info.value.kind == "error" and info.value.attempts == 1
    assert server.requests == []


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_client_errors_are_not_retried(status):
    sleeps = Sleeps()
    with FakeOpenAIServer([error(status, "nope"), ok()]) as server:
        with pytest.raises(ModelError) as info:
            local_model(server, sleep=sleeps).complete(MESSAGES)
    message = assert_one_line(info.value)
    assert message == f"openai/test-model: HTTP {status} (not retried): nope"
    assert info.value.status == status and info.value.attempts == 1
    assert len(server.requests) == 1 and sleeps == []


def test_a_timeout_is_reported_without_a_blind_retry():
    """A generation that outlasted the timeout would outlast it again: one request, not three."""
    with FakeOpenAIServer([ok("late", delay_s=1.0), ok("late", delay_s=1.0)]) as server:
        with pytest.raises(ModelError) as info:
            local_model(server, max_retries=3, timeout_s=0.3, sleep=Sleeps()).complete(MESSAGES)
    message = assert_one_line(info.value)
    assert "timed out" in message and "not retried" in message
    assert info.value.kind == "timeout" and not info.value.retryable
    assert len(server.requests) == 1


def test_a_refused_connection_is_retried_then_reported():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps = Sleeps()
    model = LiteLLMModel(
        "openai/test-model", api_base=f"http://127.0.0.1:{port}/v1", max_retries=3, backoff_s=0.01, sleep=sleeps
    )
    with pytest.raises(ModelError) as info:
        model.complete(MESSAGES)
    message = assert_one_line(info.value)
    assert "connection error" in message and "after 3 attempts" in message and str(port) in message
    assert info.value.kind == "connection" and len(sleeps) == 2


def test_path_without_v1_is_served_too():
    with FakeOpenAIServer([ok("root")]) as server:
        model = LiteLLMModel("openai/test-model", api_base=f"http://127.0.0.1:{server.port}")
        assert model.complete(MESSAGES).text == "root"
    assert server.requests[0]["path"] == "/chat/completions"


def test_get_model_reaches_a_local_server_by_bare_name():
    with FakeOpenAIServer([ok("via get_model")]) as server:
        model = get_model("test-model", api_base=server.base_url)
        assert model.complete(MESSAGES).text == "via get_model"
    assert server.requests[0]["body"]["model"] == "test-model"


# ---- streamed replies (a server of the user's: get_model(..., api_base) streams) ------------------------
def test_a_streamed_reply_is_collected_with_its_usage_and_progress():
    seen = []
    with FakeOpenAIServer(
        [ok("def f(): return 42  # a longer reply", prompt_tokens=21, completion_tokens=9)]
    ) as server:
        model = local_model(server, stream=True)
        model.on_progress = seen.append
        reply = model.complete(MESSAGES)
    assert reply.text == "def f(): return 42  # a longer reply" and reply.finish_reason == "stop"
    assert (reply.prompt_tokens, reply.completion_tokens) == (21, 9)
    assert server.requests[0]["body"]["stream"] is True
    assert seen == sorted(seen) and len(seen) >= 5  # one call per chunk, counting up


def test_a_slow_but_steady_stream_is_not_cut_off_by_the_timeout():
    """The timeout bounds a stall: 12 chunks 0.15 s apart take 1.8 s, far beyond a 0.6 s timeout."""
    with FakeOpenAIServer([ok("x" * 80, chunk_delay_s=0.15)]) as server:
        reply = local_model(server, stream=True, timeout_s=0.6).complete(MESSAGES)
    assert reply.text == "x" * 80 and reply.latency_s > 1.2


def test_a_stalled_stream_is_reported_as_a_stall_and_not_retried():
    with FakeOpenAIServer([ok("x" * 80, stall_s=3.0)]) as server:
        with pytest.raises(ModelError) as info:
            local_model(server, stream=True, timeout_s=0.5, sleep=Sleeps()).complete(MESSAGES)
    message = assert_one_line(info.value)
    assert "stalled: no new token for 0.5s" in message and info.value.kind == "timeout"
    assert len(server.requests) == 1


def test_a_model_on_a_server_of_the_users_streams():
    assert get_model("qwen", api_base="http://127.0.0.1:9/v1").stream is True
    assert get_model("openai/gpt-4o").stream is False
