"""Jinja2 prompt templates from prompts/: one per agent and backend."""

from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from agentkern.config import data_root


@lru_cache(maxsize=1)
def _env() -> Environment:
    return Environment(
        loader=FileSystemLoader(data_root() / "prompts"),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render(name: str, **context) -> str:
    return _env().get_template(f"{name}.j2").render(**context)


def template_names() -> list[str]:
    """The agents' templates; `_name.j2` files are parts they include."""
    return sorted(p.stem for p in (data_root() / "prompts").glob("*.j2") if not p.name.startswith("_"))
