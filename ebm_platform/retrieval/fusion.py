"""Reciprocal rank fusion (SR-RAG eq. D.1): RRF(d) = sum over channels of 1 / (k + rank_c(d))."""

from __future__ import annotations

from collections import defaultdict


def rrf(rankings: dict[str, list[str]], k: int = 60) -> tuple[dict[str, float], dict[str, dict[str, int]]]:
    """Fused scores and each item's 1-based rank per channel (absent channels omitted)."""
    scores: dict[str, float] = defaultdict(float)
    ranks: dict[str, dict[str, int]] = defaultdict(dict)
    for channel, ranking in rankings.items():
        for rank, item in enumerate(dict.fromkeys(ranking), 1):
            scores[item] += 1.0 / (k + rank)
            ranks[item][channel] = rank
    return dict(scores), dict(ranks)


def with_channel_heads(fused: list[str], rankings: dict[str, list[str]], m: int) -> list[str]:
    """The fused list followed by each channel's first m items that it left out: an item that one channel
    ranks first (a rare term matched exactly: "arthrographic distension" by the full-text channel) is not
    buried under items that several deep channels rank lower (RRF: rank 1 in one channel scores 1/61,
    rank 100 in three 3/160)."""
    seen = set(fused)
    heads = [item for ranking in rankings.values() for item in ranking[:m]]
    return fused + [item for item in dict.fromkeys(heads) if item not in seen]


def top(scores: dict[str, float], n: int) -> list[str]:
    """The n best items, ties broken by id for determinism."""
    return sorted(scores, key=lambda item: (-scores[item], item))[:n]
