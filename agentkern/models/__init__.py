"""Models: "any LLM, or none".

    get_model(None) / get_model("builtin")      -> None: the caller uses the built-in, offline policy
    get_model("anthropic/claude-sonnet-4-5")    -> LiteLLMModel (key from ANTHROPIC_API_KEY)
    get_model("qwen2.5-coder", api_base=URL)    -> LiteLLMModel("openai/qwen2.5-coder", api_base=URL)

Import-light: litellm is imported on a model's first call, never here.
"""

from __future__ import annotations

from .base import ChatModel, ModelError, NoCodeError, Reply, Usage, extract_solution
from .litellm_model import LiteLLMModel
from .scripted import ScriptedModel

__all__ = [
    "ChatModel",
    "LiteLLMModel",
    "ModelError",
    "NoCodeError",
    "Reply",
    "ScriptedModel",
    "Usage",
    "extract_solution",
    "get_model",
]

BUILTIN = "builtin"


def _has_provider_prefix(spec: str) -> bool:
    """Whether `spec` starts with a litellm provider ("ollama/llama3": yes; "meta-llama/Llama-3": no)."""
    if "/" not in spec:
        return False
    from .litellm_model import _import_litellm

    provider = spec.split("/", 1)[0]
    return provider in {str(getattr(p, "value", p)) for p in _import_litellm().provider_list}


def get_model(spec: str | None, api_base: str | None = None) -> ChatModel | None:
    """The model a `--model SPEC [--api-base URL]` asks for, or None for the built-in policy.

    With `api_base`, a spec without a litellm provider prefix is an OpenAI-compatible server's model name
    and gets "openai/" prepended (litellm's convention; it strips the prefix again on the wire). A served
    name that itself starts with a provider ("openai/gpt-oss-20b" on vLLM) must be written with the prefix:
    "openai/openai/gpt-oss-20b". "scripted" is for tests only (construct ScriptedModel directly)."""
    if spec is None or not spec.strip() or spec.strip().lower() == BUILTIN:
        return None
    spec = spec.strip()
    if spec.lower() == "scripted":
        from ..errors import UserError

        raise UserError(
            "the 'scripted' model exists for tests only; use 'builtin' or a litellm model such as openai/gpt-4o"
        )
    api_base = (api_base or "").strip() or None
    if api_base and not _has_provider_prefix(spec):
        spec = f"openai/{spec}"
    # A server of the user's (vLLM, llama.cpp, Ollama) may generate slowly: its replies are streamed, so the
    # timeout bounds a stall, not a generation (litellm_model.LiteLLMModel.stream).
    return LiteLLMModel(spec, api_base=api_base, stream=api_base is not None)
