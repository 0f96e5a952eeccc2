"""Adding to the knowledge base: a document or kernel file (`kb add PATH`), or a run's best kernel with its
measured result (`kb add --from-run RUN_ID`).

Added material is copied under AGENTKERN_HOME/kb (docs/ and exemplars/), so it survives rebuilds and does
not depend on the original file staying where it was. A kernel is stored as a markdown exemplar: front
matter with its op, backend, target and measured result, then the code.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import yaml

from agentkern import backends
from agentkern.config import home
from agentkern.errors import UserError
from agentkern.kb.sources import BACKENDS, GPUS, SourceError, expand_backends, expand_targets, parse_markdown


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "doc"


def _kernel_backend(source: str) -> str:
    """The backend a kernel file is filed under: the harness's detector, and cpp, kb's default before there
    was one detector, for a file it does not recognise (an exemplar needs a backend, and a file added by hand
    has no run whose recorded backend could say)."""
    detected = backends.detect(source)
    return "cpp" if detected == backends.NO_BACKEND else detected


def write_exemplar(root: Path, doc_id: str, front: dict, summary: str, code: str, reference: str = "") -> Path:
    """An exemplar document: front matter, one line on what it is, the kernel, the reference it replaces."""
    body = f"{summary}\n\n```python\n{code.rstrip()}\n```\n"
    if reference:
        body += f"\nThe PyTorch reference it replaces:\n```python\n{reference.rstrip()}\n```\n"
    path = root / "exemplars" / f"{_slug(doc_id)}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "---\n" + yaml.safe_dump({"id": doc_id, "kind": "exemplar", **front}, sort_keys=False) + "---\n" + body
    )
    return path


def add_path(kb, path: str, target: str | None = None, backend: str | None = None, op: str | None = None) -> dict:
    """A markdown document (front matter required) or a kernel file (.py defining ModelNew)."""
    src = Path(path).expanduser()
    if not src.is_file():
        raise UserError(f"no such file: {path}")
    if src.suffix == ".md":
        try:
            doc = parse_markdown(src)  # strict here: a document the user adds must index, not be skipped
        except SourceError as exc:
            raise UserError(str(exc)) from None
        dest = kb.root / "docs" / f"{_slug(doc.id)}.md"
        for other in kb.sources.documents()[0]:
            if other.id == doc.id and Path(other.path).name != dest.name:
                raise UserError(f"{path}: id {doc.id!r} is already used by {other.path}; give the document another id")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        built = kb.ensure_built()
        return {
            "id": doc.id,
            "title": doc.title,
            "kind": doc.kind,
            "path": str(dest),
            "chunks": len(doc.chunks()),
            "documents": built.get("documents"),
        }
    if src.suffix != ".py":
        raise UserError(f"{path}: kb add takes a markdown document (.md) or a kernel file (.py)")
    code = src.read_text()
    if "ModelNew" not in code:
        raise UserError(f"{path}: a kernel file must define ModelNew (KernelBench convention)")
    try:
        backend = expand_backends([backend or _kernel_backend(code)], path)[0]
        # "cpu" is the one CPU target, "gpu" every GPU: a kernel is for all of its backend's device kind.
        targets = expand_targets([target] if target else [backends.get(backend).device_kind], path)
    except SourceError as exc:
        raise UserError(str(exc)) from None
    op = op or src.stem.split("_")[0]
    doc_id = f"user-{_slug(src.stem)}"
    front = {
        "title": f"{op} kernel ({backend}, added from {src.name})",
        "targets": targets,
        "backends": [backend],
        "tags": [op, backend, "exemplar", "user"],
        "sources": [str(src.resolve())],
        "op": op,
        "origin": "user",
    }
    dest = write_exemplar(kb.root, doc_id, front, f"A `{op}` kernel ({backend}) added by hand from {src}.", code)
    built = kb.ensure_built()
    return {
        "id": doc_id,
        "title": front["title"],
        "kind": "exemplar",
        "path": str(dest),
        "chunks": 1,
        "documents": built.get("documents"),
    }


def _best_candidate(store, run: dict) -> dict | None:
    rows = store.candidates(run["run_id"])
    if run.get("best_candidate"):
        for row in rows:
            if row["candidate_id"] == run["best_candidate"]:
                return row
    # A run that was interrupted has no best recorded yet: take its fastest correct candidate so far.
    correct = [r for r in rows if r["correct"] and r["status"] == "ok" and r["speedup"]]
    return max(correct, key=lambda r: r["speedup"]) if correct else None


def _hardware(target: str) -> str:
    from agentkern.targets import get_target

    try:
        return get_target(target).display_name
    except UserError:
        return target


def _run_and_best(run_id: str, db: Path) -> tuple[dict, dict, Path]:
    """(run, its best candidate, the candidate's file) from the run store, or a UserError saying what is missing."""
    from agentkern.traces.store import RunStore

    if not db.exists():
        raise UserError(f"no run {run_id!r}: there is no run store yet ({db})")
    store = RunStore(db)
    try:
        run = store.run(run_id)
        if run is None:
            raise UserError(f"no run {run_id!r} in {db}")
        best = _best_candidate(store, run)
    finally:
        store.close()
    if best is None or not best["speedup"]:
        raise UserError(f"run {run_id} has no correct, timed candidate to add")
    kernel = Path(best["path"] or "")
    if not kernel.is_file():
        raise UserError(f"run {run_id}: the best candidate's file is gone ({kernel})")
    return run, best, kernel


def add_from_run(kb, run_id: str) -> dict:
    """The run's best kernel, with its measured result and hardware, as an exemplar for that target: the next
    run on the same target and problem finds it first among the exemplars."""
    from agentkern.traces.store import confirmed_speedup

    db = home() / "runs.db"
    run, best, kernel = _run_and_best(run_id, db)
    problem_path = Path(run["problem"] or "")
    op = problem_path.stem or "kernel"
    target, backend = run["target"], run["backend"]
    if backend not in BACKENDS:
        raise UserError(f"run {run_id}: unknown backend {backend!r}")
    hardware = _hardware(target)
    speedup = float(confirmed_speedup(run) or best["speedup"])  # as timed again, when the run confirmed it
    front = {
        "title": f"{op} kernel ({backend}, best of run {run_id}: {speedup:.2f}x on {hardware})",
        "targets": [target] if target in (*GPUS, "cpu") else ["cpu"],
        "backends": [backend],
        "tags": [op, backend, "exemplar", "run", *(best["strategy"] or "").replace("/", " ").split()],
        "sources": [f"agentkern run {run_id}, candidate {best['candidate_id']} ({db})"],
        "op": op,
        "origin": "run",
        "run_id": run_id,
        "candidate": best["candidate_id"],
        "strategy": best["strategy"],
        "speedup": round(speedup, 4),
        "kernel_ms": best["kernel_ms"],
        "reference_ms": best["reference_ms"],
        "roofline_fraction": best["roofline_fraction"],
        "target": target,
        "hardware": hardware,
        # Predicted by the cost model (the target GPU was absent in that run), not measured: say so.
        "predicted": bool(best.get("predicted")),
        "params": json.loads(best["params"]) if best.get("params") else {},
        "measured": time.strftime("%Y-%m-%d", time.localtime(best["ts"] or time.time())),
    }
    if target == "cpu":  # tuned for this CPU (its ISA, its caches): seeds runs on the same model only
        from agentkern.targets.host import cpu_model

        front["host"] = cpu_model()
    times = (
        f" ({best['kernel_ms']:.4g} ms vs {best['reference_ms']:.4g} ms)"
        if best["kernel_ms"] and best["reference_ms"]
        else ""
    )
    how = "predicted by the cost model, not measured" if front["predicted"] else "measured"
    summary = (
        f"Best kernel of run {run_id} for `{op}` on {target} ({hardware}): {speedup:.2f}x over PyTorch"
        f"{times} ({how}), strategy {best['strategy']}."
    )
    reference = problem_path.read_text() if problem_path.is_file() else ""
    dest = write_exemplar(kb.root, f"run-{run_id}", front, summary, kernel.read_text(), reference)
    built = kb.ensure_built()
    return {
        "id": f"run-{run_id}",
        "title": front["title"],
        "kind": "exemplar",
        "path": str(dest),
        "speedup": speedup,
        "target": target,
        "hardware": hardware,
        "documents": built.get("documents"),
    }


def _run_exemplars(op: str, target: str, backend: str, root: Path | None = None) -> list[tuple[float, dict, Path]]:
    """(speedup, front matter, path) of every measured run exemplar (`kb add --from-run`) for this op, target
    and backend (on the CPU target: recorded on this CPU model, or before models were recorded). Reads the
    exemplar files' front matter directly, so a run never has to open chromadb."""
    folder = (root or home() / "kb") / "exemplars"
    wanted = (op, target, (backend,))
    here = None
    if target == "cpu":  # a CPU kernel's parameters were tuned for the CPU it ran on: same model only
        from agentkern.targets.host import cpu_model

        here = cpu_model()
    found = []
    for path in sorted(folder.glob("run-*.md")) if folder.is_dir() else []:
        text = path.read_text(errors="replace")
        if not text.startswith("---\n") or "\n---\n" not in text[4:]:
            continue
        try:
            front = yaml.safe_load(text[4 : text.index("\n---\n", 4)]) or {}
        except yaml.YAMLError:
            continue
        mine = (front.get("op"), front.get("target"), tuple(front.get("backends") or ()))
        other_cpu = here is not None and front.get("host") not in (None, here)
        if mine == wanted and not front.get("predicted") and not other_cpu:
            found.append((float(front.get("speedup") or 0), front, path))
    return found


def best_run_params(op: str, target: str, backend: str, root: Path | None = None) -> tuple[dict, str] | None:
    """(params, exemplar id) of the fastest run exemplar for this op, target and backend that recorded its
    template parameters: the built-in policy starts its search there."""
    found = [(s, f) for s, f, _ in _run_exemplars(op, target, backend, root) if f.get("params")]
    if not found:
        return None
    _, front = max(found, key=lambda f: f[0])
    return front["params"], str(front.get("id"))


def best_run_exemplar(op: str, target: str, backend: str, root: Path | None = None) -> tuple[Path, str] | None:
    """(file, exemplar id) of the fastest run exemplar for this op, target and backend: an LLM run's first
    parent (policies/start.py)."""
    found = _run_exemplars(op, target, backend, root)
    if not found:
        return None
    _, front, path = max(found, key=lambda f: f[0])
    return path, str(front.get("id", path.stem))
