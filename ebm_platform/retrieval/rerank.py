"""Two-stage rerank (SR-RAG 3.4): coarse late interaction, then the fine score s(q, d).

Coarse: ColBERT MaxSim, s_col(q, d) = sum_i max_j cos(e_i^q, e_j^d), over the embedder's
token embeddings ([CLS]/[SEP] dropped): the window's were stored by `window_index` (one forward
pass at index time), the question's come from its own forward pass at query time.
Fine: a sentence-transformers CrossEncoder logit when EBM_CROSS_ENCODER names one; otherwise
the offline scorer s(q, d) = cos(q, d) + LEXICAL_WEIGHT * coverage(q, d): the bi-encoder cosine
plus the IDF-weighted share of the question's terms found in the window (retrieval/lexical.py).
Both terms are bounded whatever the lengths of q and d, which BETR's r = a * s + u(grade) needs.
LEXICAL_WEIGHT was chosen on Evidence Inference *train* questions over the all-article evaluation
lake (README, Evaluation); the validation split was not used to choose it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ebm_platform.index.embeddings import model_path
from ebm_platform.retrieval.lexical import TermStatistics

LEXICAL_WEIGHT = 0.4


def maxsim(query_tokens: np.ndarray, doc_tokens: np.ndarray) -> float:
    """Sum over query tokens of the best cosine with any document token (rows L2-normalised)."""
    if not len(query_tokens) or not len(doc_tokens):
        return 0.0
    return float((query_tokens @ doc_tokens.T).max(axis=1).sum())


@lru_cache(maxsize=2)
def _cross_encoder(name: str):
    from sentence_transformers import CrossEncoder

    return CrossEncoder(model_path(name), device="cpu")


class Reranker:
    """Coarse MaxSim over the fused candidates, fine s(q, d) over the coarse top."""

    def __init__(self, cross_encoder: str | None = None, term_statistics: TermStatistics | None = None) -> None:
        self.cross_encoder = cross_encoder
        self.term_statistics = term_statistics

    @property
    def fine_name(self) -> str:
        return f"cross-encoder:{self.cross_encoder}" if self.cross_encoder else \
            f"offline: bi-encoder cosine + {LEXICAL_WEIGHT} x IDF-weighted term coverage"

    @staticmethod
    def coarse(question_tokens: np.ndarray, documents_tokens: list[np.ndarray]) -> list[float]:
        q = question_tokens.astype(np.float32)
        return [maxsim(q, d.astype(np.float32)) for d in documents_tokens]

    def fine(self, question: str, texts: list[str], cosines: list[float]) -> list[float]:
        if self.cross_encoder:
            scores = _cross_encoder(self.cross_encoder).predict([(question, t) for t in texts], show_progress_bar=False)
            return [float(s) for s in scores]
        stats = self.term_statistics or TermStatistics(texts)
        return [c + LEXICAL_WEIGHT * stats.coverage(question, t) for c, t in zip(cosines, texts)]
