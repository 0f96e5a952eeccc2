"""The knowledge base's index: a chromadb PersistentClient under AGENTKERN_HOME/kb.

`ensure_built()` compares a hash of every source file (and the chunking schema and the embedding) with the
one recorded at the last build, and only when they differ re-reads the sources; the collection is then
updated chunk by chunk (each chunk carries its content hash), so an edit to one document re-embeds that
document only. One collection per embedding: switching embeddings never mixes vectors of different models.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

from agentkern.config import data_root, dataset_dir, home
from agentkern.errors import UserError
from agentkern.kb.sources import BACKENDS, SCHEMA, TARGETS, Sources

DOC_EXCERPT_CHARS = 1200  # a section of a guide: enough to act on, small enough for three in a prompt
EXEMPLAR_EXCERPT_CHARS = 6000  # a kernel is only useful whole


def kb_root() -> Path:
    return home() / "kb"


def default_sources(root: Path | None = None) -> Sources:
    root = root or kb_root()
    return Sources(
        docs_dirs=[data_root() / "knowledge_base", root / "docs"],
        dataset_dir=dataset_dir(),
        exemplar_dir=root / "exemplars",
    )


def _configure_caches() -> None:
    """chromadb (its ONNX model folder, its telemetry id) and the Hugging Face stack (MiniLM) would write under
    the user's home; keep them under AGENTKERN_HOME, and never let them reach for the network."""
    cache = home() / "cache"
    os.environ.setdefault("HF_HOME", str(cache / "huggingface"))
    os.environ.setdefault("SENTENCE_TRANSFORMERS_HOME", str(cache / "sentence-transformers"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    # chromadb reads these paths from Path.home() at import time: point them here before anything uses them.
    from chromadb.telemetry.product import ProductTelemetryClient
    from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

    ONNXMiniLM_L6_V2.DOWNLOAD_PATH = cache / "chroma" / "onnx_models" / ONNXMiniLM_L6_V2.MODEL_NAME
    ProductTelemetryClient.USER_ID_PATH = str(cache / "chroma" / "telemetry_user_id")


@contextmanager
def _lock(path: Path):
    """Two processes building the same index at once (parallel runs, tests) take turns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def where_clause(target: str | None, backend: str | None, kinds: tuple[str, ...] | None) -> dict | None:
    """Chroma metadata filter. Documents tagged [all] or [gpu] carry t_<target>=True for each target they
    cover, so a filter on one target finds them."""
    clauses: list[dict] = []
    if target:
        if target not in TARGETS:
            raise UserError(f"unknown target {target!r}: choose one of {', '.join(TARGETS)}")
        clauses.append({f"t_{target}": True})
    if backend:
        if backend not in BACKENDS:
            raise UserError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
        clauses.append({f"b_{backend}": True})
    if kinds:
        clauses.append({"kind": {"$in": list(kinds)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _result(chunk_id: str, text: str, meta: dict, distance: float) -> dict:
    kind = meta.get("kind", "")
    body = text.split("\n\n", 1)[-1]  # without the title/tags header every chunk starts with
    limit = EXEMPLAR_EXCERPT_CHARS if kind == "exemplar" else DOC_EXCERPT_CHARS
    excerpt = body if len(body) <= limit else body[:limit].rsplit(" ", 1)[0] + " ..."
    extra = {
        k: v
        for k, v in meta.items()
        if not k.startswith(("t_", "b_"))
        and k not in {"doc_id", "title", "kind", "section", "path", "sources", "tags", "targets", "backends", "hash"}
    }
    return {
        "id": meta["doc_id"],
        "title": meta.get("title", ""),
        "kind": kind,
        "section": meta.get("section", ""),
        "excerpt": excerpt,
        "text": text,
        "sources": [s for s in meta.get("sources", "").split("\n") if s],
        "tags": [t for t in meta.get("tags", "").split(", ") if t],
        "targets": [t for t in meta.get("targets", "").split(",") if t],
        "backends": [b for b in meta.get("backends", "").split(",") if b],
        "path": meta.get("path", ""),
        "chunk": chunk_id,
        "distance": round(float(distance), 4),
        **extra,
    }


class KnowledgeBase:
    def __init__(self, root: Path | None = None, sources: Sources | None = None, embedding: str | None = None) -> None:
        from agentkern.kb.embedding import get_embedding

        self.root = Path(root) if root else kb_root()
        self.sources = sources or default_sources(self.root)
        self.embedding = get_embedding(embedding)
        self.collection_name = f"kb-{self.embedding.name()}"
        self.state_path = self.root / f"state-{self.embedding.name()}.json"
        self._client = None

    # ---- the chroma side ----------------------------------------------------------------------------------
    def client(self):
        if self._client is None:
            _configure_caches()
            import chromadb
            from chromadb.config import Settings

            self._client = chromadb.PersistentClient(
                path=str(self.root / "chroma"), settings=Settings(anonymized_telemetry=False)
            )
        return self._client

    def collection(self):
        """The collection, built or brought up to date first."""
        self.ensure_built()
        return self.client().get_or_create_collection(self.collection_name, embedding_function=self.embedding)

    # ---- building -----------------------------------------------------------------------------------------
    def digest(self, manifest: dict[str, str]) -> str:
        key = {
            "schema": SCHEMA,
            "backends": list(BACKENDS),  # a chunk has a b_<name> flag per backend: a new backend rebuilds
            "embedding": self.embedding.name(),
            "config": self.embedding.get_config(),
            "files": manifest,
        }
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()

    def state(self) -> dict:
        try:
            return json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            return {}

    def ensure_built(self, force: bool = False) -> dict:
        """Rebuild when a source changed since the last build (or with force). Returns what was done."""
        manifest = self.sources.manifest()
        digest = self.digest(manifest)
        state = self.state()
        if not force and state.get("digest") == digest and (self.root / "chroma").exists():
            return {**state, "rebuilt": False}
        with _lock(self.root / "build.lock"):
            state = self.state()  # another process may have built it while we waited
            if not force and state.get("digest") == digest and (self.root / "chroma").exists():
                return {**state, "rebuilt": False}
            return self._build(digest, force)

    def _build(self, digest: str, force: bool) -> dict:
        started = time.perf_counter()
        docs, problems = self.sources.documents()
        chunks = {c.id: c for d in docs for c in d.chunks()}
        client = self.client()
        if force:
            try:
                client.delete_collection(self.collection_name)
            except Exception:  # chromadb raises NotFoundError (not exported stably) when there is none
                pass
        coll = client.get_or_create_collection(self.collection_name, embedding_function=self.embedding)
        have = coll.get(include=["metadatas"])
        indexed = {i: (m or {}).get("hash") for i, m in zip(have["ids"], have["metadatas"])}
        stale = [i for i, h in indexed.items() if i not in chunks or chunks[i].meta["hash"] != h]
        fresh = [c for i, c in chunks.items() if indexed.get(i) != c.meta["hash"]]
        if stale:
            coll.delete(ids=stale)
        batch = max(1, min(256, client.get_max_batch_size()))
        for start in range(0, len(fresh), batch):
            part = fresh[start : start + batch]
            coll.add(ids=[c.id for c in part], documents=[c.text for c in part], metadatas=[c.meta for c in part])
        kinds: dict[str, int] = {}
        for d in docs:
            kinds[d.kind] = kinds.get(d.kind, 0) + 1
        state = {
            "digest": digest,
            "built": time.time(),
            "embedding": self.embedding.name(),
            "documents": len(docs),
            "chunks": len(chunks),
            "kinds": kinds,
            "problems": problems,
            "embedded": len(fresh),
            "removed": len(stale),
            "seconds": round(time.perf_counter() - started, 3),
        }
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        self.state_path.write_text(json.dumps(state, indent=2))
        return {**state, "rebuilt": True}

    # ---- reading ------------------------------------------------------------------------------------------
    def query(
        self,
        text: str,
        target: str | None = None,
        backend: str | None = None,
        k: int = 5,
        kinds: tuple[str, ...] | None = None,
    ) -> list[dict]:
        """The k best documents for `text` (one result per document: its best-matching chunk)."""
        if not text or not text.strip():
            raise UserError("the query is empty")
        if k < 1:
            raise UserError("k must be at least 1")
        where = where_clause(target, backend, kinds)
        coll = self.collection()
        total = coll.count()
        if total == 0:
            return []
        # Ask for more chunks than documents wanted: several chunks of one document may rank first.
        n = min(total, max(4 * k, 20))
        found = coll.query(
            query_texts=[text], n_results=n, where=where, include=["documents", "metadatas", "distances"]
        )
        results: dict[str, dict] = {}
        for cid, doc, meta, dist in zip(
            found["ids"][0], found["documents"][0], found["metadatas"][0], found["distances"][0]
        ):
            if meta["doc_id"] not in results:
                results[meta["doc_id"]] = _result(cid, doc, meta, dist)
            if len(results) == k:
                break
        return list(results.values())

    def stats(self) -> dict:
        state = self.ensure_built()
        coll = self.client().get_or_create_collection(self.collection_name, embedding_function=self.embedding)
        size = sum(p.stat().st_size for p in (self.root / "chroma").rglob("*") if p.is_file())
        return {
            "path": str(self.root),
            "embedding": self.embedding.name(),
            "documents": state.get("documents", 0),
            "chunks": coll.count(),
            "kinds": state.get("kinds", {}),
            "built": state.get("built"),
            "build_seconds": state.get("seconds"),
            "problems": state.get("problems", []),
            "disk_bytes": size,
            "sources": [str(p) for p in self.sources.docs_dirs]
            + [str(p) for p in (self.sources.dataset_dir, self.sources.exemplar_dir) if p],
        }
