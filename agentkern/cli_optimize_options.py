"""The options of `agentkern optimize` (and of `bench`, which runs it per problem), as typer annotations."""

from __future__ import annotations

from typing import Annotated

import typer

from agentkern import backends

ProblemArg = Annotated[
    str | None,
    typer.Argument(
        help="An op name from kernels_dataset (softmax, matmul, ...) or a problem file; not needed with --resume."
    ),
]
Backend = Annotated[
    str | None,
    typer.Option(
        help=f"{', '.join(backends.names())} (default: {backends.default_for('cpu')} on a CPU, "
        f"{backends.default_for('gpu')} on a GPU)."
    ),
]
Model = Annotated[
    str | None,
    typer.Option(help="A litellm model string (openai/..., anthropic/..., ollama/...); default: the built-in policy."),
]
ApiBase = Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible server (vLLM, llama.cpp, ...).")]
MaxIters = Annotated[int, typer.Option(min=1, help="Iterations at most.")]
Patience = Annotated[
    int,
    typer.Option(
        min=1,
        help="Stop after this many iterations without a gain of --min-gain. A stalled iteration first widens the "
        "search to its next stage (1 to 3) and counts only at the last: up to PATIENCE + 2 stalled iterations.",
    ),
]
MinGain = Annotated[float, typer.Option(min=0.0, help="Relative gain in speedup@k that counts as progress.")]
K = Annotated[int | None, typer.Option(min=1, help="speedup@k looks at the first k candidates (default: all).")]
Beam = Annotated[int, typer.Option(min=1, help="Candidates per iteration.")]
TimeBudget = Annotated[float | None, typer.Option("--time-budget", min=0.0, help="Seconds for the whole run.")]
MaxCost = Annotated[float | None, typer.Option(min=0.0, help="Dollars of model calls at most.")]
MaxTokens = Annotated[int | None, typer.Option(min=0, help="Model tokens at most.")]
Seed = Annotated[int, typer.Option(help="Seed of the built-in policy's search.")]
OutDir = Annotated[
    str | None, typer.Option("--out", help="Folder for the best kernel (default: AGENTKERN_HOME/runs/RUN_ID).")
]
Resume = Annotated[str | None, typer.Option(help="Continue a run that was interrupted.")]
JsonEnd = Annotated[bool, typer.Option("--json", help="Print one JSON object at the end.")]
ContextWindow = Annotated[
    int | None,
    typer.Option(
        min=256,
        help="The model's context window in tokens (default: litellm's figure, else the server's, else 4096). "
        "Prompts are trimmed and replies budgeted to fit it.",
    ),
]
StartFrom = Annotated[
    str,
    typer.Option(
        help="An LLM run's first kernel: exemplar (the knowledge base's best for this problem and target), builtin "
        "(the built-in template), scratch (the model writes it), or auto (exemplar, else builtin, else scratch).",
    ),
]
StopAtRoofline = Annotated[
    float | None,
    typer.Option(min=0.0, help="Stop once the best kernel reaches this fraction of the roofline bound."),
]
ConfirmBudget = Annotated[
    float | None,
    typer.Option(
        "--confirm-budget",
        min=0.0,
        help="Once the search stops, time its best candidates again for this many seconds each and report the "
        "fastest as re-timed (the fastest of many short timings is biased upwards); 0: report the search's figures.",
    ),
]
