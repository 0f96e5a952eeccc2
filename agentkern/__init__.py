"""agentkern: generate and optimise compute kernels with LLM agents, judged by a harness that cannot be fooled."""

__version__ = "0.1.0"
