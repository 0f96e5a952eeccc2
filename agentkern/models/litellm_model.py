"""Any LLM through litellm: `LiteLLMModel("anthropic/claude-...")`, `LiteLLMModel("openai/qwen", api_base=...)`.

litellm is imported on first use (it takes ~3 s), with its cost map read from the installed package (no
network). Retries are ours, not litellm's (`num_retries=0`): exponential back-off with jitter, honouring a
Retry-After header, on rate limits, connection errors and 5xx; never on 4xx, a malformed response, or a
timeout (the same generation would time out again).

How a failure is classified. litellm's exception *types* are not reliable on their own (measured with
litellm 1.106.2 against a local server, see tests/unit/test_models.py):

- a 200 response whose body is not JSON is raised as `InternalServerError` with `status_code == 500`
  (openai/ provider) or as `APIConnectionError` (anthropic/, ollama/), or `APIError` with status 200
  (hosted_vllm/): retrying on "500" or "connection error" would hammer a server that answers garbage;
- a refused or dropped connection is raised as `InternalServerError` (500) for openai/ and anthropic/;
- the exception's own `.response` is synthetic (empty headers, a made-up URL): the real headers are in
  `.litellm_response_headers`.

The exception chain (`__cause__` / `__context__`) does tell the truth in every case measured: a
`json.JSONDecodeError` for a malformed body, an `httpx.HTTPStatusError` carrying the real status and
headers for an HTTP error, an `httpx` transport error for a connection failure. So we classify by the
chain first and fall back to litellm's types and status codes.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .base import ModelError, Reply, one_line

__all__ = ["LiteLLMModel", "DUMMY_API_KEY"]

DUMMY_API_KEY = "sk-none"

# Providers that speak the OpenAI API to whatever `api_base` says, and the env var litellm reads a key from.
_OPENAI_COMPATIBLE_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "hosted_vllm": "HOSTED_VLLM_API_KEY",
    "openai_like": "OPENAI_LIKE_API_KEY",
    "custom_openai": "OPENAI_API_KEY",
    "lm_studio": "LM_STUDIO_API_KEY",
    "llamafile": "LLAMAFILE_API_KEY",
}

_RETRYABLE_STATUS = {408, 409, 425, 429}  # plus every 5xx

_import_lock = threading.Lock()
_litellm: Any = None


def _import_litellm() -> Any:
    """Import litellm once, offline and quiet."""
    global _litellm
    if _litellm is None:
        with _import_lock:
            if _litellm is None:
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                litellm.suppress_debug_info = True
                _litellm = litellm
    return _litellm


@dataclass
class _Failure:
    kind: str  # "http", "timeout", "connection", "malformed", "error"
    retryable: bool
    detail: str  # one line, for the message
    status: int | None = None
    retry_after: float | None = None


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen and len(out) < 20:
        seen.add(id(e))
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


_PREFIXES = [
    re.compile(p)
    for p in (
        r"^litellm\.\w+:\s*",
        r"^\w+(Error|Exception):\s*",
        r"^\w+Exception\s*-\s*",
        r"^LiteLLM:\s*",
        r"^error\s*-\s*",
        r"^Error code: \d+\s*-\s*",
    )
]


def _server_message(text: str) -> str:
    """The useful part of an error string: without litellm's "litellm.X: X: OpenAIException - " wrapping,
    and the `message` out of a JSON error body when there is one."""
    text = re.sub(r"\.?\s*Handle with `litellm\.\w+`\.?\s*$", "", str(text).strip())
    changed = True
    while changed:
        changed = False
        for p in _PREFIXES:
            new = p.sub("", text, count=1)
            if new != text:
                text, changed = new.strip(), True
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            text = str(err.get("message") or err.get("detail") or err)
        elif isinstance(err, str):
            text = err
        elif "detail" in body:
            text = str(body["detail"])
    return one_line(text, 300)


def _retry_after(headers: Any) -> float | None:
    """Seconds from Retry-After-Ms / Retry-After (seconds or an HTTP date), or None."""
    if not headers:
        return None
    try:
        get = headers.get
    except AttributeError:
        return None

    def header(name: str) -> str | None:
        value = get(name)
        if value is None and isinstance(headers, dict):  # plain dicts are case-sensitive
            value = next((v for k, v in headers.items() if str(k).lower() == name), None)
        return value

    ms = header("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = header("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _classify(exc: BaseException, litellm: Any, timeout_s: float, api_base: str | None) -> _Failure:
    import httpx  # a dependency of litellm and openai: already imported by now

    chain = _chain(exc)

    # 1. A real HTTP error status, with the real headers and body (it wins over any parsing error below it).
    for e in chain:
        if isinstance(e, httpx.HTTPStatusError):
            status = e.response.status_code
            headers = getattr(exc, "litellm_response_headers", None) or e.response.headers
            try:
                body = e.response.text
            except httpx.ResponseNotRead:
                body = ""
            message = _server_message(body) if body.strip() else _server_message(str(exc))
            return _http_failure(status, message, _retry_after(headers))

    # 2. A 2xx body that was not JSON: whatever litellm calls it (500, APIConnectionError, ...), not transient.
    for e in chain:
        if isinstance(e, json.JSONDecodeError):
            body = one_line(e.doc[:80], 80) if isinstance(e.doc, str) else ""
            return _Failure("malformed", False, f"not JSON ({e.msg} at char {e.pos}; body starts {body!r})")

    # 3. Timeouts, then connection failures (refused, reset, dropped mid-response, DNS).
    timeout_types: tuple[type, ...] = (httpx.TimeoutException, TimeoutError, litellm.Timeout)
    if any(isinstance(e, timeout_types) for e in chain):
        # Not retried: a generation that outlasted the timeout (a slow local model) would outlast it again, and
        # each blind retry costs the whole timeout (and, on a hosted model, the tokens) once more.
        return _Failure("timeout", False, f"request timed out (no answer for {timeout_s:g}s; not retried)")
    connection_types: tuple[type, ...] = (httpx.TransportError, ConnectionError)
    for e in chain:
        if isinstance(e, connection_types):
            where = f" to {api_base}" if api_base else ""
            return _Failure("connection", True, f"connection error{where}: {one_line(str(e) or type(e).__name__, 200)}")

    # 4. A JSON body litellm could not turn into a response ("choices" missing, not a list, not an object,
    #    ...): it raises a nested litellm.APIError, an OpenAIError("Empty or invalid response ..."), or a bare
    #    Exception("Invalid response object ...") holding a traceback.
    for e in chain[1:]:
        text = str(e)
        if (isinstance(e, litellm.APIError) and "provider returned" in text) or "Empty or invalid response" in text:
            return _Failure("malformed", False, _server_message(text))
        if text.startswith("Invalid response object"):
            last = [line for line in text.split("\n\nreceived_args=")[0].splitlines() if line.strip()]
            return _Failure(
                "malformed", False, one_line(f"invalid response object ({last[-1].strip() if last else '?'})", 300)
            )

    # 5. No evidence in the chain: trust a status only when litellm saw a real response (it keeps the
    #    headers). Anything else happened on our side before or after the request (e.g. "Missing
    #    credentials", which litellm also raises as a 500) and is not retried: litellm's catch-all type for
    #    errors it cannot map is APIConnectionError, so the type alone proves nothing.
    status = getattr(exc, "status_code", None)
    headers = getattr(exc, "litellm_response_headers", None)
    message = _server_message(str(exc))
    if isinstance(exc, litellm.RateLimitError):
        return _http_failure(429, message, _retry_after(headers))
    if isinstance(status, int) and headers is not None and status >= 400:
        return _http_failure(status, message, _retry_after(headers))
    return _Failure("error", False, message or type(exc).__name__)


def _http_failure(status: int, message: str, retry_after: float | None) -> _Failure:
    retryable = status in _RETRYABLE_STATUS or status >= 500
    detail = f"HTTP {status}" + ("" if retryable else " (not retried)") + (f": {message}" if message else "")
    return _Failure("http", retryable, detail, status=status, retry_after=retry_after)


class LiteLLMModel:
    """A ChatModel backed by `litellm.completion`.

    `model` is a litellm model string ("openai/gpt-4o", "anthropic/claude-sonnet-4-5", "ollama/qwen2.5-coder",
    or "openai/<name>" for any OpenAI-compatible server at `api_base`). Keys come from the providers' usual
    environment variables unless `api_key` is given; an OpenAI-compatible `api_base` with no key anywhere
    gets a dummy one, so local servers (vLLM, llama.cpp, LM Studio) work as they are.

    `max_retries` is the most HTTP requests one `complete` makes (3: the first and two retries). Waits
    between them: `backoff_s * 2**n` plus up to 25% jitter, capped at `max_backoff_s`, and never shorter
    than a Retry-After the server sent; a Retry-After longer than `max_backoff_s` ends the call at once.
    `sleep` is injectable (tests)."""

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key: str | None = None,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        timeout_s: float = 120.0,
        *,
        max_backoff_s: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        extra: dict | None = None,
        stream: bool = False,
    ):
        if not model or not model.strip():
            raise ValueError("LiteLLMModel needs a model string, e.g. 'openai/gpt-4o'")
        if max_retries < 1:
            raise ValueError("max_retries counts attempts and must be at least 1")
        self.name = model.strip()
        self.api_base = api_base or None
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.timeout_s = float(timeout_s)
        self.max_backoff_s = float(max_backoff_s)
        self.sleep = sleep
        self.extra = dict(extra or {})  # passed to litellm.completion, last (e.g. {"top_p": 0.9, "drop_params": False})
        self.api_key = api_key or self._default_key()
        self._rng = random.Random()
        # Streamed: the reply arrives chunk by chunk, so `timeout_s` bounds a stall (no chunk for that long), not
        # a slow model's whole generation; `on_progress(chunks so far)` follows it (the live view).
        self.stream = stream
        self.on_progress: Callable[[int], None] | None = None

    def _default_key(self) -> str | None:
        if not self.api_base:
            return None
        provider = self.name.split("/", 1)[0] if "/" in self.name else "openai"
        env = _OPENAI_COMPATIBLE_KEY_ENV.get(provider)
        if env is None or os.environ.get(env):
            return None  # litellm reads the provider's own env var
        return DUMMY_API_KEY

    def __repr__(self) -> str:
        base = f", api_base={self.api_base!r}" if self.api_base else ""
        return f"LiteLLMModel({self.name!r}{base})"

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        delay = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        delay += self._rng.uniform(0.0, delay / 4)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return delay

    def complete(self, messages: list[dict], *, temperature: float = 0.2, max_tokens: int = 4096) -> Reply:
        litellm = _import_litellm()
        kwargs: dict[str, Any] = {
            "model": self.name,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "timeout": self.timeout_s,
            "num_retries": 0,  # ours, below (without it the OpenAI SDK retries twice itself)
            "drop_params": True,  # o-series / gpt-5 refuse temperature != 1: drop it rather than fail every call
        }
        if self.stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}  # the usage block, for tokens and cost
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        kwargs.update(self.extra)

        start = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            try:
                response = litellm.completion(**kwargs)
                if self.stream:
                    response = self._collect(litellm, response, messages)
                break
            except Exception as exc:  # noqa: BLE001 - every failure becomes a ModelError
                failure = _classify(exc, litellm, self.timeout_s, self.api_base)
                if self.stream and failure.kind == "timeout":
                    failure.detail = f"stalled: no new token for {self.timeout_s:g}s (not retried)"
                too_long = failure.retryable and (failure.retry_after or 0.0) > self.max_backoff_s
                if not failure.retryable or attempt >= self.max_retries or too_long:
                    raise self._error(failure, attempt, too_long) from exc
                self.sleep(self._delay(attempt, failure.retry_after))

        text, finish_reason = self._read(response, attempt)
        usage = getattr(response, "usage", None)
        return Reply(
            text=text,
            model=self.name,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=self._cost(litellm, response),
            latency_s=time.monotonic() - start,
            attempts=attempt,
            finish_reason=finish_reason,
        )

    def _collect(self, litellm: Any, stream: Any, messages: list[dict]) -> Any:
        """The streamed chunks as one response (litellm's builder: text, finish reason, usage)."""
        chunks = []
        for chunk in stream:
            chunks.append(chunk)
            if self.on_progress is not None:
                self.on_progress(len(chunks))
        return litellm.stream_chunk_builder(chunks, messages=messages) if chunks else None  # None: _read refuses it

    def _error(self, f: _Failure, attempts: int, too_long: bool) -> ModelError:
        if f.kind == "malformed":
            message = f"{self.name}: malformed response from the server: {f.detail}"
        elif too_long:
            message = f"{self.name}: {f.detail} (the server asks to wait {f.retry_after:.0f}s, more than {self.max_backoff_s:g}s)"
        elif f.retryable:
            n = f"{attempts} attempt" + ("s" if attempts != 1 else "")
            head, _, tail = f.detail.partition(": ")
            message = f"{self.name}: {head} after {n}" + (f": {tail}" if tail else "")
        else:
            message = f"{self.name}: {f.detail}"
        return ModelError(
            message, model=self.name, kind=f.kind, status=f.status, attempts=attempts, retryable=f.retryable
        )

    def _read(self, response: Any, attempts: int) -> tuple[str, str | None]:
        """Text and finish reason of the first choice; a response without one is malformed."""

        def malformed(why: str) -> ModelError:
            return ModelError(
                f"{self.name}: malformed response from the server: {why}",
                model=self.name,
                kind="malformed",
                attempts=attempts,
            )

        choices = getattr(response, "choices", None)
        if not choices:
            return_type = type(response).__name__
            raise malformed(f"no choices in the response ({return_type})")
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None:
            raise malformed("the first choice has no message")
        content = getattr(message, "content", None)
        if isinstance(content, list):  # content parts
            content = "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
        return (content if isinstance(content, str) else "", getattr(choice, "finish_reason", None))

    @staticmethod
    def _cost(litellm: Any, response: Any) -> float:
        """USD from litellm's (local) price table; 0.0 for models it does not know (local servers)."""
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # noqa: BLE001 - ModelNotMappedError and friends
            return 0.0
        return float(cost or 0.0)
