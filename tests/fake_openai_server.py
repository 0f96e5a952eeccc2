"""A real OpenAI-compatible HTTP server on 127.0.0.1, playing a script of responses (tests only).

    with FakeOpenAIServer([error(429), ok("hi")]) as server:
        model = LiteLLMModel("openai/test-model", api_base=server.base_url, ...)
        ...
        server.requests  # what it received: [{"path", "headers", "body" (parsed JSON or None)}]

Serves POST /v1/chat/completions and /chat/completions (and /v1/messages, for anthropic/ error paths).
Each request consumes one scripted response; the last one repeats when the script runs out (so "500 every
time" is `[error(500)]`). Responses: `ok(...)`, `error(status, ...)`, `raw(status, bytes)`; any of them may
carry `delay_s` (to provoke a timeout).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PATHS = ("/v1/chat/completions", "/chat/completions", "/v1/messages")  # the last for anthropic/ models


@dataclass
class Response:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    # A streamed reply (a request with "stream": true): seconds between chunks, and a stall of stall_s
    # seconds after the first chunk (a server that stops sending without closing)
    chunk_delay_s: float = 0.0
    stall_s: float = 0.0


def ok(
    text: str = "hello",
    *,
    prompt_tokens: int = 11,
    completion_tokens: int = 7,
    model: str = "test-model",
    finish_reason: str = "stop",
    usage: bool = True,
    delay_s: float = 0.0,
    chunk_delay_s: float = 0.0,
    stall_s: float = 0.0,
) -> Response:
    payload = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
    }
    if usage:
        payload["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return Response(200, json.dumps(payload).encode(), delay_s=delay_s, chunk_delay_s=chunk_delay_s, stall_s=stall_s)


def _sse_events(response: Response) -> list[bytes]:
    """A 200 chat completion as server-sent events: the text in chunks of 8 characters, the finish reason,
    the usage (as stream_options include_usage asks), [DONE]."""
    payload = json.loads(response.body)
    choice = payload["choices"][0]
    text = choice["message"]["content"] or ""
    base = {k: payload[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    deltas = [{"role": "assistant", "content": ""}] + [{"content": text[i : i + 8]} for i in range(0, len(text), 8)]
    events = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    if "usage" in payload:
        events.append({**base, "choices": [], "usage": payload["usage"]})
    return [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]


def error(status: int, message: str = "scripted failure", *, headers: dict[str, str] | None = None) -> Response:
    body = {"error": {"message": message, "type": "fake_error", "code": status}}
    return Response(status, json.dumps(body).encode(), dict(headers or {}))


def raw(status: int, body: bytes | str, *, content_type: str = "application/json") -> Response:
    data = body.encode() if isinstance(body, str) else body
    return Response(status, data, {"Content-Type": content_type})


class FakeOpenAIServer:
    def __init__(self, script: list[Response]):
        if not script:
            raise ValueError("the script needs at least one response")
        self.script = list(script)
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(data)
                except ValueError:
                    body = None
                with server._lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    response = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                if self.path.split("?")[0] not in PATHS:
                    response = error(404, f"no route {self.path}")
                if response.delay_s:
                    time.sleep(response.delay_s)
                if response.status == 200 and isinstance(body, dict) and body.get("stream"):
                    self._stream(response)
                    return
                try:
                    self.send_response(response.status)
                    headers = {"Content-Type": "application/json", **response.headers}
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(response.body)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(response.body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
                    pass
                self.close_connection = True

            def _stream(self, response: Response) -> None:
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for i, event in enumerate(_sse_events(response)):
                        self.wfile.write(event)
                        self.wfile.flush()
                        time.sleep(response.stall_s if i == 1 else response.chunk_delay_s)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
