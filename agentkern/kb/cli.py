"""`agentkern kb`: build, query, add to and describe the knowledge base.

Thin commands over agentkern.kb; chromadb is imported inside them so `agentkern --help` stays fast. Bad input
raises UserError: agentkern.cli.main prints one line and exits 2.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console

from agentkern import backends
from agentkern.errors import UserError

app = typer.Typer(
    name="kb",
    help="The knowledge base (hardware docs, guides, exemplar kernels) the planner and coder read.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(soft_wrap=True)

EmbeddingOpt = Annotated[
    str | None,
    typer.Option(
        "--embedding",
        help="hashing (built in, default) or minilm (needs the optional minilm extra); env AGENTKERN_KB_EMBEDDING.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _kb(embedding: str | None):
    from agentkern.kb.store import KnowledgeBase

    return KnowledgeBase(embedding=embedding)


def _target_name(target: str | None) -> str | None:
    """A catalog name (h100), an alias or auto; the knowledge base filters on canonical names."""
    from agentkern.kb.sources import TARGETS

    if target is None or target.lower() in TARGETS:
        return target and target.lower()
    from agentkern.targets import get_target

    return get_target(target).name


@app.command("build")
def build_command(
    force: Annotated[bool, typer.Option("--force", help="Re-embed everything, even if nothing changed.")] = False,
    embedding: EmbeddingOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Index knowledge_base/, kernels_dataset/ and what was added (only what changed since the last build)."""
    kb = _kb(embedding)
    result = kb.ensure_built(force=force)
    if not result["documents"]:  # an install without its data folders, or AGENTKERN_DATA pointing elsewhere
        where = ", ".join(str(p) for p in [*kb.sources.docs_dirs, kb.sources.dataset_dir] if p)
        raise UserError(f"no documents to index: none found in {where} (AGENTKERN_DATA names the data folder)")
    if json_out:
        print(json.dumps(result, indent=2, default=str))
        return
    if result["rebuilt"]:
        out.print(
            f"indexed {result['documents']} documents ({result['chunks']} chunks, {result['embedded']} embedded, "
            f"{result['removed']} removed) with {result['embedding']} in {result['seconds']:.2f} s",
            highlight=False,
        )
    else:
        out.print(
            f"up to date: {result['documents']} documents, {result['chunks']} chunks ({result['embedding']})",
            highlight=False,
        )
    for problem in result.get("problems", []):
        out.print(f"[yellow]skipped:[/] {problem}", highlight=False)


@app.command("query")
def query_command(
    text: Annotated[str, typer.Argument(help="What you want to know, in words or code.")],
    target: Annotated[
        str | None, typer.Option("--target", "-t", help="Only documents for this target (h100, cpu, ...).")
    ] = None,
    backend: Annotated[
        str | None, typer.Option(help=f"Only documents for this backend ({', '.join(backends.names())}).")
    ] = None,
    k: Annotated[int, typer.Option("--k", help="How many documents.")] = 5,
    kind: Annotated[str | None, typer.Option(help="Only this kind: target, guide or exemplar.")] = None,
    embedding: EmbeddingOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """The documents closest to TEXT, best first (one entry per document: its best-matching section)."""
    from agentkern.kb.sources import KINDS

    if kind is not None and kind not in KINDS:
        raise UserError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
    results = _kb(embedding).query(text, _target_name(target), backend, k=k, kinds=(kind,) if kind else None)
    if json_out:
        print(json.dumps(results, indent=2, default=str))
        return
    if not results:
        out.print("no documents match", highlight=False)
    for n, r in enumerate(results, 1):
        where = f" - {r['section']}" if r["section"] else ""
        out.print(
            f"[bold]{n}. {r['title']}[/]{where}  [dim]({r['kind']}, {r['id']}, distance {r['distance']:.3f})[/]",
            highlight=False,
        )
        for source in r["sources"][:2]:
            out.print(f"   source: {source}", highlight=False)
        snippet = " ".join(r["excerpt"].split())
        out.print(f"   {snippet[:300]}{' ...' if len(snippet) > 300 else ''}", highlight=False)


@app.command("add")
def add_command(
    path: Annotated[
        str | None, typer.Argument(help="A markdown document with front matter, or a kernel file (.py).")
    ] = None,
    from_run: Annotated[
        str | None, typer.Option("--from-run", help="Add this run's best kernel, with its measured result.")
    ] = None,
    target: Annotated[
        str | None, typer.Option("--target", "-t", help="For a kernel file: the target it is for.")
    ] = None,
    backend: Annotated[
        str | None, typer.Option(help=f"For a kernel file: {', '.join(backends.names())} (default: detected).")
    ] = None,
    op: Annotated[
        str | None, typer.Option(help="For a kernel file: the op it computes (default: from the file name).")
    ] = None,
    embedding: EmbeddingOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Add a document or kernel file (PATH), or a run's best kernel (--from-run RUN_ID), and index it."""
    from agentkern.kb import ingest

    if (path is None) == (from_run is None):
        raise UserError("kb add takes a PATH or --from-run RUN_ID (one of the two)")
    kb = _kb(embedding)
    if from_run is not None:
        result = ingest.add_from_run(kb, from_run)
    else:
        result = ingest.add_path(kb, path, target=_target_name(target), backend=backend, op=op)
    if json_out:
        print(json.dumps(result, indent=2, default=str))
    else:
        out.print(f"added {result['id']}: {result['title']} ({result['path']})", highlight=False)


@app.command("stats")
def stats_command(embedding: EmbeddingOpt = None, json_out: JsonOpt = False) -> None:
    """What is indexed: documents by kind, chunks, embedding, size, skipped files."""
    stats = _kb(embedding).stats()
    if json_out:
        print(json.dumps(stats, indent=2, default=str))
        return
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(stats["kinds"].items()))
    out.print(
        f"{stats['documents']} documents ({kinds}), {stats['chunks']} chunks, embedding {stats['embedding']}, "
        f"{stats['disk_bytes'] / 1e6:.1f} MB at {stats['path']}",
        highlight=False,
    )
    for problem in stats["problems"]:
        out.print(f"[yellow]skipped:[/] {problem}", highlight=False)
