"""Two-stage rerank (SR-RAG 3.4): coarse late interaction, then the fine score s(q, d).

Coarse: ColBERT MaxSim, s_col(q, d) = sum_i max_j cos(e_i^q, e_j^d), over the embedder's
token embeddings ([CLS]/[SEP] dropped).
Fine: a sentence-transformers CrossEncoder logit when EBM_CROSS_ENCODER names one; otherwise
the offline scorer s(q, d) = cos(q, d) + LEXICAL_WEIGHT * coverage(q, d): the bi-encoder cosine
plus the IDF-weighted share of the question's terms found in the window (retrieval/lexical.py).
Both terms are bounded whatever the lengths of q and d, which BETR's r = a * s + u(grade) needs.
LEXICAL_WEIGHT was chosen on Evidence Inference *train* questions over the all-article evaluation
lake (README, Evaluation); the validation split was not used to choose it.
"""

from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache

import numpy as np

from ebm_platform.index.embeddings import load_embedder, model_path
from ebm_platform.retrieval.lexical import TermStatistics

LEXICAL_WEIGHT = 0.4


def maxsim(query_tokens: np.ndarray, doc_tokens: np.ndarray) -> float:
    """Sum over query tokens of the best cosine with any document token (rows L2-normalised)."""
    if not len(query_tokens) or not len(doc_tokens):
        return 0.0
    return float((query_tokens @ doc_tokens.T).max(axis=1).sum())


class TokenEmbedder:
    """Token embeddings with a bounded cache (a window's tokens are reused across questions)."""

    def __init__(self, model_name: str, cache_size: int = 3000) -> None:
        self.model_name = model_name
        self.cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.cache_size = cache_size

    def encode(self, texts: list[str]) -> list[np.ndarray]:
        model = load_embedder(self.model_name)
        out = model.encode(texts, output_value="token_embeddings", batch_size=16, show_progress_bar=False)
        result = []
        for tokens in out:
            t = tokens.detach().cpu().numpy()[1:-1] if hasattr(tokens, "detach") else np.asarray(tokens)[1:-1]
            norms = np.linalg.norm(t, axis=1, keepdims=True)
            result.append((t / np.where(norms == 0, 1, norms)).astype(np.float16))
        return result

    def documents(self, keys: list[str], texts: list[str]) -> list[np.ndarray]:
        missing = list(dict.fromkeys((k, t) for k, t in zip(keys, texts) if k not in self.cache))
        if missing:
            for (k, _), tokens in zip(missing, self.encode([t for _, t in missing])):
                self.cache[k] = tokens
        for k in keys:
            self.cache.move_to_end(k)
        result = [self.cache[k] for k in keys]
        while len(self.cache) > max(self.cache_size, len(set(keys))):  # evict only after this request is served
            self.cache.popitem(last=False)
        return result


@lru_cache(maxsize=2)
def _cross_encoder(name: str):
    from sentence_transformers import CrossEncoder

    return CrossEncoder(model_path(name), device="cpu")


class Reranker:
    """Coarse MaxSim over the fused candidates, fine s(q, d) over the coarse top."""

    def __init__(self, model_name: str, cross_encoder: str | None = None,
                 term_statistics: TermStatistics | None = None) -> None:
        self.tokens = TokenEmbedder(model_name)
        self.cross_encoder = cross_encoder
        self.term_statistics = term_statistics
        self._question: tuple[str, np.ndarray] | None = None

    def _question_tokens(self, question: str) -> np.ndarray:
        """The question's token embeddings, kept for the coarse and fine stages of one query."""
        if self._question is None or self._question[0] != question:
            self._question = (question, self.tokens.encode([question])[0].astype(np.float32))
        return self._question[1]

    @property
    def fine_name(self) -> str:
        return f"cross-encoder:{self.cross_encoder}" if self.cross_encoder else \
            f"offline: bi-encoder cosine + {LEXICAL_WEIGHT} x IDF-weighted term coverage"

    def coarse(self, question: str, keys: list[str], texts: list[str]) -> list[float]:
        q = self._question_tokens(question)
        docs = self.tokens.documents(keys, texts)
        return [maxsim(q, d.astype(np.float32)) for d in docs]

    def fine(self, question: str, texts: list[str], cosines: list[float]) -> list[float]:
        if self.cross_encoder:
            scores = _cross_encoder(self.cross_encoder).predict([(question, t) for t in texts], show_progress_bar=False)
            return [float(s) for s in scores]
        stats = self.term_statistics or TermStatistics(texts)
        return [c + LEXICAL_WEIGHT * stats.coverage(question, t) for c, t in zip(cosines, texts)]
