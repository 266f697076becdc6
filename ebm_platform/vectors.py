"""Vector arithmetic the index, the graph and the encoder share."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Embed = Callable[[list[str]], np.ndarray]


def unit_rows(m: np.ndarray) -> np.ndarray:
    """Each row of `m` scaled to unit L2 norm (an all-zero row stays zero), in `m`'s float type."""
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)


def embedded_once(embed: Embed, limit: int = 50_000) -> Embed:
    """`embed` that encodes each distinct text once and keeps its vector (up to `limit` texts, then it
    starts afresh): an answer compares the evidence's entity names with the question's, the same names
    in every cited window and every question ("pain" 67 times in 20 of the demo's questions), and the
    evaluation embeds each answer's statements once per metric; 1,125 distinct texts of 2,435. The
    encoder's vectors do not depend on the batch a text comes in, so a kept vector is the one a new
    call would give. Safe from several threads (a call reads only what it looked up or computed)."""
    vectors: dict[str, np.ndarray] = {}

    def embed_once(texts: list[str]) -> np.ndarray:
        if not texts:
            return embed(texts)
        known = {t: vectors.get(t) for t in dict.fromkeys(texts)}
        missing = [t for t, v in known.items() if v is None]
        if missing:
            known.update(zip(missing, embed(missing)))
            if len(vectors) + len(missing) > limit:
                vectors.clear()
            vectors.update((t, known[t]) for t in missing)
        return np.stack([known[t] for t in texts])

    return embed_once
