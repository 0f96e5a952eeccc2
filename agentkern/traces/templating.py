"""The Jinja2 environment of agentkern/traces/templates: the HTML report (escaped) and the files `traces
export` writes (Python, Markdown: not escaped)."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

TEMPLATES = Path(__file__).parent / "templates"


def environment() -> Environment:
    # StrictUndefined: a name missing from the context is a bug to hear about, not an empty string in a file.
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html.j2"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["py"] = repr  # a Python literal in generated code: {{ value|py }}
    return env


def render(name: str, **context) -> str:
    return environment().get_template(name).render(**context)
