"""IDF-weighted term coverage: the lexical half of the offline fine scorer.

coverage(q, d) = sum of idf(t) over the question's content terms found in d, divided by the sum
over all of the question's content terms, with idf(t) = ln(1 + (N - df_t + 0.5) / (df_t + 0.5))
over the N windows of the lake (BM25's idf). It lies in [0, 1] whatever the lengths of q and d,
so, unlike a raw BM25 score, it can be added to a cosine and fed to BETR.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

LEXICAL_WEIGHT = 0.4  # weight of coverage in the hand-set fine scorer cos + 0.4 * coverage (retrieval/rerank.py)
_TERM = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    "a an and are as at be by compared does do for from how in is of on or than that the their this to "
    "versus vs was were what when which who with".split()
)


@lru_cache(maxsize=16384)
def terms(text: str) -> frozenset[str]:
    """Lower-cased word terms without stopwords (cached: the fine scorer's features read each
    candidate window's terms five times, and the same windows recur across questions)."""
    return frozenset(t for t in _TERM.findall(text.lower()) if t not in STOPWORDS)


def stem(term: str) -> str:
    """A term with a plural -s folded ("exercises" -> "exercise"; "fitness" is kept)."""
    return term[:-1] if len(term) > 3 and term.endswith("s") and not term.endswith("ss") else term


@lru_cache(maxsize=16384)
def stems(text: str) -> frozenset[str]:
    """The content terms of `text`, plural-folded (cached as `terms` is: an answer stems each cited
    sentence once per feature that reads it)."""
    return frozenset(stem(t) for t in terms(text))


class TermStatistics:
    """Document frequencies over a set of windows."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.df: Counter = Counter()
        self.n = 0
        for text in texts:
            self.df.update(terms(text))
            self.n += 1

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def coverage(self, question: str, text: str) -> float:
        """Share of the question's idf mass whose terms occur in `text`."""
        q = terms(question)
        total = sum(self.idf(t) for t in q)
        if not total:
            return 0.0
        found = terms(text)
        return sum(self.idf(t) for t in q if t in found) / total
