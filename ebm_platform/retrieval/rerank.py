"""The rerank (SR-RAG 3.4): late interaction and the fine score s(q, d).

Late interaction: ColBERT MaxSim, s_col(q, d) = sum_i max_j cos(e_i^q, e_j^d), over the embedder's
token embeddings ([CLS]/[SEP] dropped): the window's were stored by `window_index` (one forward
pass at index time), the question's come from its own forward pass at query time. It is one of
the learned scorer's features (retrieval/features.py).
Fine: a sentence-transformers CrossEncoder logit when EBM_CROSS_ENCODER names one; else the
learned LambdaRank model (retrieval/learned.py) when the lake holds a usable one; else the
hand-set offline scorer s(q, d) = cos(q, d) + LEXICAL_WEIGHT * coverage(q, d): the bi-encoder
cosine plus the IDF-weighted share of the question's terms found in the window
(retrieval/lexical.py), both bounded whatever the lengths of q and d. LEXICAL_WEIGHT was chosen on
Evidence Inference *train* questions over the all-article evaluation lake (docs/evaluation.md).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ebm_platform.bundled_model import model_path
from ebm_platform.retrieval.features import FEATURES
from ebm_platform.retrieval.learned import LearnedReranker
from ebm_platform.retrieval.lexical import LEXICAL_WEIGHT, TermStatistics


@lru_cache(maxsize=2)
def _cross_encoder(name: str):
    from sentence_transformers import CrossEncoder

    return CrossEncoder(model_path(name), device="cpu")


class Reranker:
    """The fine scorer s(q, d): a cross-encoder when named, else the learned model when the lake
    holds a usable one (and the strategy wants it), else the hand-set offline scorer."""

    def __init__(
        self,
        cross_encoder: str | None = None,
        term_statistics: TermStatistics | None = None,
        learned: LearnedReranker | None = None,
    ) -> None:
        self.cross_encoder = cross_encoder
        self.term_statistics = term_statistics
        self.learned = learned

    def uses_learned(self, wanted: bool = True) -> bool:
        return wanted and not self.cross_encoder and self.learned is not None and self.learned.usable

    def fine_name(self, learned: bool = True) -> str:
        if self.cross_encoder:
            return f"cross-encoder:{self.cross_encoder}"
        if self.uses_learned(learned):
            return self.learned.name
        return f"offline: bi-encoder cosine + {LEXICAL_WEIGHT} x IDF-weighted term coverage"

    def fine(self, question: str, texts: list[str], features: np.ndarray, learned: bool = True) -> list[float]:
        """s(q, d) per candidate; `features` are the candidates' FEATURES rows."""
        if self.cross_encoder:
            scores = _cross_encoder(self.cross_encoder).predict([(question, t) for t in texts], show_progress_bar=False)
            return [float(s) for s in scores]
        if self.uses_learned(learned):
            return [float(s) for s in self.learned.score(features)]
        cosine, coverage = FEATURES.index("cosine"), FEATURES.index("coverage")
        return [float(f[cosine] + LEXICAL_WEIGHT * f[coverage]) for f in features]
