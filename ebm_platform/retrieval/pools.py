"""Cand(q): the query pipeline's candidate pool before BETR, the same generator at training and
inference (SR-RAG App. B.8): every shortlisted window with its fine score s(q, d), grade and gold flag."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from ebm_platform.retrieval.features import FEATURES
from ebm_platform.retrieval.rerank import Reranker

POOL_SCHEMA = {
    "question_id": pl.String,
    "condition": pl.String,
    "window_id": pl.String,
    "s": pl.Float64,
    "grade": pl.String,
    "gold": pl.Boolean,
    "scorer": pl.String,
    "split": pl.String,
}


def candidate_pools(
    candidates: pl.DataFrame, questions: pl.DataFrame, reranker: Reranker, texts: Callable[[list[str]], list[str]]
) -> pl.DataFrame:
    """Pools from `candidates` (reranker_data.candidate_rows: SR-RAG's fused candidates, over every
    condition as `ebm ask` runs by default, in the pipeline's order) scored by `reranker`'s fine
    scorer, exactly as the query path scores them before BETR; `texts` reads windows' texts (only
    a cross-encoder reads them). `scorer` names the fine scorer that gave s."""
    if not candidates.height:
        return pl.DataFrame(schema=POOL_SCHEMA)
    asked = dict(questions.select("question_id", "question").iter_rows())
    condition = dict(questions.select("question_id", "condition").iter_rows())
    scorer = reranker.fine_name()
    frames = []
    for (question_id,), group in candidates.group_by("question_id", maintain_order=True):
        ids = group["window_id"].to_list()
        s = reranker.fine(
            asked[question_id], texts(ids) if reranker.cross_encoder else [], group.select(FEATURES).to_numpy()
        )
        frames.append(
            group.select("question_id", "window_id", "grade", "gold", "split").with_columns(
                condition=pl.lit(condition[question_id], pl.String),
                s=pl.Series(s, dtype=pl.Float64),
                scorer=pl.lit(scorer, pl.String),
            )
        )
    return pl.concat(frames).select(list(POOL_SCHEMA))
