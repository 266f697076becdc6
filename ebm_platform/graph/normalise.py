"""Entity normalisation and merging: exact after normalisation, then embedding similarity."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

_ARTICLES = re.compile(r"^(?:the|a|an)\s+", re.I)


def normalise(name: str) -> str:
    """Lower case, unified dashes and quotes, punctuation folded, leading articles dropped."""
    text = name.lower().replace("–", "-").replace("—", "-").replace("’", "'")
    text = re.sub(r"[^\w%+\-/. ]", " ", text)
    text = re.sub(r"\s+", " ", text).strip(" .-")
    return _ARTICLES.sub("", text)


def mostly_numeric(name: str) -> bool:
    """Names like '12 weeks' or '20-60' never merge by similarity (numbers differ, vectors don't)."""
    chars = [c for c in name if not c.isspace()]
    if not chars:
        return False
    digit_share = sum(c.isdigit() for c in chars) / len(chars)
    return digit_share >= 0.3 or (any(c.isdigit() for c in chars) and len(name) < 12)


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


# Name pairs compared a block at a time: 2,048 x 2,048 cosines (16 MB) and two blocks of vectors, whatever the
# partition's size (a block of 1,024 names against every name of the type held 4 KB per name: 250 MB at 60,000).
SIMILARITY_BLOCK = 2048


def merge_entities(
    keys: list[tuple[str, str]],
    vectors: Callable[[list[str]], np.ndarray],
    threshold: float = 0.92,
) -> dict[tuple[str, str], tuple[str, str]]:
    """Map each (type, normalised name) to its canonical (type, name).

    Exact duplicates are already one key; within a type, non-numeric names whose embeddings
    (`vectors`: the rows of a list of names, asked a block of names at a time) have cosine >=
    `threshold` merge (conservative: synonyms and spelling variants only).
    The canonical member is the shortest name, ties broken alphabetically."""
    canonical: dict[tuple[str, str], tuple[str, str]] = {k: k for k in keys}
    by_type: dict[str, list[str]] = {}
    for type_, norm in keys:
        by_type.setdefault(type_, []).append(norm)
    for type_, names in by_type.items():
        candidates = sorted(n for n in set(names) if not mostly_numeric(n))
        if len(candidates) < 2:
            continue
        uf = _UnionFind(len(candidates))
        for start in range(0, len(candidates), SIMILARITY_BLOCK):  # one block of cosines at a time
            block = vectors(candidates[start : start + SIMILARITY_BLOCK])
            for first in range(start, len(candidates), SIMILARITY_BLOCK):  # pairs (i, j > i) only
                other = block if first == start else vectors(candidates[first : first + SIMILARITY_BLOCK])
                rows, cols = np.nonzero(block @ other.T >= threshold)
                for r, c in zip((rows + start).tolist(), (cols + first).tolist()):
                    if r < c:
                        uf.union(r, c)
        groups: dict[int, list[str]] = {}
        for i, name in enumerate(candidates):
            groups.setdefault(uf.find(i), []).append(name)
        for members in groups.values():
            head = min(members, key=lambda m: (len(m), m))
            for m in members:
                canonical[(type_, m)] = (type_, head)
    return canonical
