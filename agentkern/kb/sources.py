"""What goes into the knowledge base: documents, their chunks and metadata, and a manifest of the files.

Three kinds of source:
- markdown documents (knowledge_base/**/*.md, and those added with `kb add`) with YAML front matter (title,
  id, kind, targets, backends, tags, sources), split into chunks at `## ` headings;
- exemplar kernels from kernels_dataset/: the reference solutions and the built-in policy's templates,
  each one chunk, with op, backend and strategy tags;
- exemplars added from runs (`kb add --from-run`): markdown with the measured result in front matter.

Chroma metadata values must be scalars, so a document's target and backend lists are stored twice: as a
readable comma list, and as one boolean per target (`t_h100`) and backend (`b_triton`) for the filters.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from agentkern import backends
from agentkern.targets.catalog import GPU_NAMES

# The targets' catalog (agentkern/targets/catalog.py) names them; listing the names measures nothing.
GPUS = GPU_NAMES
TARGETS = (*GPUS, "cpu")
BACKENDS = backends.names()  # agentkern/backends/: one module each
KINDS = ("target", "guide", "exemplar")
SCHEMA = 1  # bump when chunking or metadata change: every index is rebuilt
MAX_CHUNK_CHARS = 2400  # a longer section is split at paragraphs: one vector per idea, not per chapter

_HEADING = re.compile(r"^## +(.+?)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


class SourceError(ValueError):
    """A document that cannot be indexed (bad front matter, unknown target, ...)."""


@dataclass
class Chunk:
    id: str
    text: str
    meta: dict


@dataclass
class Document:
    id: str
    title: str
    kind: str
    targets: list[str]
    backends: list[str]
    tags: list[str]
    sources: list[str]
    path: str
    body: str
    extra: dict = field(default_factory=dict)  # op, speedup, hardware, ...: scalars only

    def sections(self) -> list[tuple[str, str]]:
        if self.kind == "exemplar":
            return [("", self.body)]  # a kernel is read whole
        return _split_sections(self.body)

    def chunks(self) -> list[Chunk]:
        out = []
        for n, (heading, text) in enumerate(self.sections()):
            # Every chunk repeats the title and heading: a section's words alone often do not say what it is about.
            header = self.title + (f" - {heading}" if heading else "")
            body = f"{header}\n{' '.join(self.tags)}\n\n{text.strip()}"
            meta = {
                "doc_id": self.id,
                "title": self.title,
                "kind": self.kind,
                "section": heading,
                "path": self.path,
                "sources": "\n".join(self.sources),
                "tags": ", ".join(self.tags),
                "targets": ",".join(self.targets),
                "backends": ",".join(self.backends),
                "hash": hashlib.sha256(body.encode()).hexdigest()[:16],
            }
            meta.update({f"t_{t}": t in self.targets for t in TARGETS})
            meta.update({f"b_{b}": b in self.backends for b in BACKENDS})
            meta.update({k: v for k, v in self.extra.items() if isinstance(v, (str, int, float, bool))})
            out.append(Chunk(id=f"{self.id}#{n}", text=body, meta=meta))
        return out


def _split_sections(body: str) -> list[tuple[str, str]]:
    """(heading, text) at each `## ` outside code fences; the text before the first heading is the intro."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in body.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        found = None if fenced else _HEADING.match(line)
        if found:
            sections.append((found.group(1), []))
        else:
            sections[-1][1].append(line)
    merged = [(h, "\n".join(lines).strip()) for h, lines in sections]
    if len(merged) > 1 and len(merged[0][1]) < 200:  # a one-line intro is not worth a vector of its own
        merged[1] = (merged[1][0], (merged[0][1] + "\n\n" + merged[1][1]).strip())
        merged = merged[1:]
    out = []
    for heading, text in merged:
        if not text:
            continue
        out.extend((heading, piece) for piece in _pieces(text))
    return out


def _pieces(text: str) -> list[str]:
    if len(text) <= MAX_CHUNK_CHARS:
        return [text]
    pieces, current = [], ""
    for para in re.split(r"\n\s*\n", text):
        if current and len(current) + len(para) > MAX_CHUNK_CHARS:
            pieces.append(current)
            current = ""
        current = f"{current}\n\n{para}" if current else para
    return pieces + ([current] if current else [])


def _expand(values, allowed: tuple[str, ...], groups: dict[str, tuple[str, ...]], what: str, where: str) -> list[str]:
    if values is None:
        raise SourceError(f"{where}: front matter lacks `{what}`")
    if isinstance(values, str):
        values = [v.strip() for v in values.split(",")]
    out: list[str] = []
    for value in values:
        value = str(value).strip().lower()
        if value in groups:
            out.extend(groups[value])
        elif value in allowed:
            out.append(value)
        else:
            raise SourceError(f"{where}: unknown {what[:-1]} {value!r} (known: {', '.join(allowed + tuple(groups))})")
    return sorted(set(out), key=out.index)


def expand_targets(values, where: str = "") -> list[str]:
    return _expand(values, TARGETS, {"all": TARGETS, "gpu": GPUS}, "targets", where)


def expand_backends(values, where: str = "") -> list[str]:
    return _expand(values, BACKENDS, {"all": BACKENDS}, "backends", where)


def split_front_matter(text: str) -> tuple[dict, str]:
    if not text.startswith("---"):
        return {}, text
    end = re.search(r"^---\s*$", text[3:], re.M)
    if not end:
        raise SourceError("front matter opened with --- but never closed")
    try:
        meta = yaml.safe_load(text[3 : 3 + end.start()]) or {}
    except yaml.YAMLError as exc:
        raise SourceError(f"front matter is not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(meta, dict):
        raise SourceError("front matter is not a mapping")
    return meta, text[3 + end.end() :].lstrip("\n")


def parse_markdown(path: Path, label: str | None = None) -> Document:
    """A markdown document with front matter. Raises SourceError naming the file when it cannot be indexed."""
    where = label or str(path)
    try:
        meta, body = split_front_matter(path.read_text())
    except SourceError as exc:
        raise SourceError(f"{where}: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"{where}: cannot read it ({exc})") from None
    if not meta:
        raise SourceError(f"{where}: no front matter (---, title, id, kind, targets, backends, sources, ---)")
    title = str(meta.get("title") or "").strip()
    if not title:
        raise SourceError(f"{where}: front matter lacks `title`")
    kind = str(meta.get("kind") or "guide").strip().lower()
    if kind not in KINDS:
        raise SourceError(f"{where}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    sources = meta.get("sources") or []
    if isinstance(sources, str):
        sources = [sources]
    tags = meta.get("tags") or []
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",")]
    extra = {
        k: v
        for k, v in meta.items()
        if k not in {"title", "id", "kind", "targets", "backends", "tags", "sources"}
        and isinstance(v, (str, int, float, bool))
    }
    return Document(
        id=str(meta.get("id") or path.stem).strip(),
        title=title,
        kind=kind,
        targets=expand_targets(meta.get("targets", ["all"]), where),
        backends=expand_backends(meta.get("backends", ["all"]), where),
        tags=[str(t) for t in tags],
        sources=[str(s) for s in sources],
        path=label or str(path),
        body=body,
        extra=extra,
    )


# ---- exemplar kernels from kernels_dataset ------------------------------------------------------------------


def _exemplar_targets(backend: str, where: str) -> list[str]:
    """The targets a dataset kernel is for: the CPU, or every GPU, by its backend's device kind."""
    if backend not in BACKENDS:
        raise SourceError(f"{where}: unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    return ["cpu"] if backends.get(backend).device_kind == "cpu" else list(GPUS)


def _solution_notes(readme: Path) -> dict[str, str]:
    """kernels_dataset/solutions/README.md's table: file name -> its 'Approach' column."""
    notes = {}
    if readme.exists():
        for line in readme.read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 4 and cells[0].startswith("`"):
                notes[cells[0].strip("`")] = cells[-1]
    return notes


def _reference(dataset: Path, op: str) -> str:
    path = dataset / "problems" / f"{op}.py"
    return path.read_text() if path.exists() else ""


def solution_document(path: Path, dataset: Path, notes: dict[str, str]) -> Document:
    op, _, backend = path.stem.rpartition("_")
    rel = f"kernels_dataset/solutions/{path.name}"
    note = notes.get(path.name, "")
    reference = _reference(dataset, op)
    body = f"Reference solution for `{op}` ({backend}). {note}\n\n```python\n{path.read_text()}```\n" + (
        f"\nThe PyTorch reference it replaces:\n```python\n{reference}```\n" if reference else ""
    )
    return Document(
        id=f"solution-{path.stem}",
        title=f"{op} kernel ({backend}, reference solution {path.name})",
        kind="exemplar",
        targets=_exemplar_targets(backend, rel),
        backends=[backend],
        tags=[op, backend, "exemplar", "solution"],
        sources=[rel],
        path=rel,
        body=body,
        extra={"op": op, "origin": "solution"},
    )


def template_document(path: Path, dataset: Path) -> Document:
    op, backend = path.parent.name, path.name.split(".")[0]
    rel = f"kernels_dataset/templates/{op}/{path.name}"
    space_file = path.with_name(f"{backend}.json")
    space = json.loads(space_file.read_text()).get("params", {}) if space_file.exists() else {}
    # Strategy tags: the template's parameters and their named choices (online_exp2, three_pass, ...).
    strategy = list(space) + [str(v) for values in space.values() for v in values if isinstance(v, str)]
    reference = _reference(dataset, op)
    body = (
        f"Parametrised {backend} template for `{op}` (Jinja2; the built-in policy searches its parameters: "
        f"{json.dumps(space)}).\n\n```jinja\n{path.read_text()}```\n"
        + (f"\nThe PyTorch reference:\n```python\n{reference}```\n" if reference else "")
    )
    return Document(
        id=f"template-{op}-{backend}",
        title=f"{op} kernel template ({backend}, {rel})",
        kind="exemplar",
        targets=_exemplar_targets(backend, rel),
        backends=[backend],
        tags=[op, backend, "exemplar", "template", *strategy],
        sources=[rel],
        path=rel,
        body=body,
        extra={"op": op, "origin": "template"},
    )


# ---- the set of sources -------------------------------------------------------------------------------------


@dataclass
class Sources:
    docs_dirs: list[Path]  # markdown documents: the repository's knowledge_base/, the user's added docs
    dataset_dir: Path | None  # kernels_dataset/ (solutions, templates, problems)
    exemplar_dir: Path | None  # exemplars added from runs

    def files(self) -> list[tuple[str, Path]]:
        """(kind of source, path) for every file that feeds the index, in a stable order."""
        out: list[tuple[str, Path]] = []
        for root in self.docs_dirs:
            if root.is_dir():
                out += [("markdown", p) for p in sorted(root.rglob("*.md")) if p.name.lower() != "readme.md"]
        if self.exemplar_dir and self.exemplar_dir.is_dir():
            out += [("markdown", p) for p in sorted(self.exemplar_dir.glob("*.md"))]
        if self.dataset_dir and self.dataset_dir.is_dir():
            d = self.dataset_dir
            out += [("solution", p) for p in sorted((d / "solutions").glob("*.py"))]
            out += [
                ("template", p)
                for p in sorted((d / "templates").glob("*/*.py.j2"))
                if not p.parent.name.startswith("_")
            ]
            # Not indexed themselves, but their text is in the exemplars: a change must rebuild them.
            out += [("support", p) for p in sorted((d / "problems").glob("*.py"))]
            out += [("support", p) for p in sorted((d / "templates").glob("*/*.json"))]
            out += [("support", p) for p in [d / "solutions" / "README.md"] if p.exists()]
        return out

    def manifest(self) -> dict[str, str]:
        """path -> content hash. Paths, not only contents: a renamed document is a different document."""
        return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()[:16] for _, p in self.files()}

    def documents(self) -> tuple[list[Document], list[str]]:
        """Every document that parses, and one line for each file that does not (skipped, not fatal: a
        half-written document must not stop a run)."""
        docs: list[Document] = []
        problems: list[str] = []
        notes = _solution_notes(self.dataset_dir / "solutions" / "README.md") if self.dataset_dir else {}
        for kind, path in self.files():
            try:
                if kind == "markdown":
                    docs.append(parse_markdown(path, _label(path, self.docs_dirs)))
                elif kind == "solution":
                    docs.append(solution_document(path, self.dataset_dir, notes))
                elif kind == "template":
                    docs.append(template_document(path, self.dataset_dir))
            except SourceError as exc:
                problems.append(str(exc))
        seen: dict[str, str] = {}
        unique = []
        for doc in docs:
            if doc.id in seen:
                problems.append(f"{doc.path}: id {doc.id!r} is already used by {seen[doc.id]}; skipped")
                continue
            seen[doc.id] = doc.path
            unique.append(doc)
        return unique, problems


def _label(path: Path, roots: list[Path]) -> str:
    """A short, stable name for a document: relative to the folder above its root (knowledge_base/...)."""
    for root in roots:
        try:
            return str(path.relative_to(root.parent))
        except ValueError:
            continue
    return str(path)
