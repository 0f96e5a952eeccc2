"""How many tokens a model's context window holds: what the user says, what litellm knows, what the server says.

In that order: `--context-window`; litellm's model information (hosted models); an OpenAI-compatible server's
own `/models` answer (vLLM's `max_model_len`, llama.cpp's `n_ctx`); else 4096, the default window of
llama.cpp's and Ollama's servers, said so in the trace. A scripted model (tests) may carry
`context_window` itself.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

DEFAULT_WINDOW = 4096
PROBE_TIMEOUT_S = 3.0
# Keys under which OpenAI-compatible servers report a model's window in their /models answer.
_SERVER_KEYS = ("max_model_len", "n_ctx", "context_length", "context_window", "max_context_length")


def context_window(model: Any, override: int | None = None) -> tuple[int | None, str]:
    """(tokens, where that figure comes from); tokens None when the model has no window (a script)."""
    if override:
        return int(override), "--context-window"
    own = getattr(model, "context_window", None)
    if own:
        return int(own), "the model's own"
    if not hasattr(model, "api_base"):  # not a litellm model: a test's stand-in, no window
        return None, "none (not a served model)"
    name, api_base = model.name, model.api_base
    known = _litellm_window(name)
    if known:
        return known, "litellm's model information"
    if api_base:
        served = _server_window(api_base, name.split("/", 1)[-1])
        if served:
            return served, f"the server's /models ({api_base})"
    return DEFAULT_WINDOW, (
        f"not known for {name}: assumed {DEFAULT_WINDOW} tokens (the default of llama.cpp and Ollama servers); "
        "set --context-window"
    )


def _litellm_window(name: str) -> int | None:
    from agentkern.models.litellm_model import _import_litellm

    try:
        info = _import_litellm().get_model_info(name)
    except Exception:  # noqa: BLE001 - litellm raises a bare Exception for a model it does not map
        return None
    value = info.get("max_input_tokens") or info.get("max_tokens")
    return int(value) if value else None


def _server_window(api_base: str, served_name: str) -> int | None:
    url = api_base.rstrip("/") + "/models"
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_S) as response:  # noqa: S310 - the user's server
            body = json.loads(response.read(1 << 20))
    except (OSError, ValueError):
        return None
    entries = body.get("data") if isinstance(body, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        if entry.get("id") not in (served_name, None) and len(entries) > 1:
            continue
        for where in (entry, entry.get("meta") or {}):
            for key in _SERVER_KEYS:
                if isinstance(where.get(key), int) and where[key] > 0:
                    return where[key]
    return None
