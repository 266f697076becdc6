"""Cand(q): the query pipeline's candidate pool before BETR, the same generator at training and
inference (SR-RAG App. B.8): every shortlisted window with its fine score s(q, d), grade and gold flag."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from ebm_platform.retrieval.features import FEATURES
from ebm_platform.retrieval.rerank import Reranker

OUT_OF_FOLD = ", out of fold"  # ends the scorer name of a row scored by a fold model that did not see its question
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
    candidates: pl.DataFrame,
    questions: pl.DataFrame,
    reranker: Reranker,
    texts: Callable[[list[str]], list[str]],
    out_of_fold: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Pools from `candidates` (reranker_data.candidate_rows: SR-RAG's fused candidates, over every
    condition as `ebm ask` runs by default, in the pipeline's order) scored by `reranker`'s fine
    scorer, exactly as the query path scores them before BETR; `texts` reads windows' texts (only
    a cross-encoder reads them). `scorer` names the fine scorer that gave s. When the learned scorer
    ranks, a question it learned from takes its `out_of_fold` s (question_id, window_id, s: the
    score of the fold model that did not see it), so that BETR is fitted on scores as unseen
    questions get them."""
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
    pools = pl.concat(frames)
    if out_of_fold is not None and reranker.uses_learned():
        learned_from = pl.col("question_id").is_in(out_of_fold["question_id"].unique().sort().to_list())
        pools = pools.join(
            out_of_fold.rename({"s": "s_out_of_fold"}), on=["question_id", "window_id"], how="left"
        ).with_columns(
            s=pl.when(learned_from).then(pl.col("s_out_of_fold")).otherwise(pl.col("s")),
            scorer=pl.when(learned_from).then(pl.lit(f"{scorer}{OUT_OF_FOLD}")).otherwise(pl.col("scorer")),
        )
        if pools.filter(pl.col("s").is_null()).height:
            raise ValueError("out-of-fold scores miss candidates of a question the learned scorer learned from")
    return pools.select(list(POOL_SCHEMA))


def fitted_scorer(pools: pl.DataFrame) -> str:
    """The fine scorer that BETR parameters fitted on `pools` belong to: the one the query path runs.
    The rows of the questions it learned from carry its out-of-fold scores (named with OUT_OF_FOLD),
    which stand in for the scores it gives questions it never saw."""
    names = {name.removesuffix(OUT_OF_FOLD) for name in pools["scorer"].unique().to_list()}
    if len(names) != 1:
        raise ValueError(f"candidate pools scored by {len(names)} fine scorers ({sorted(names)}); BETR fits one")
    return names.pop()
