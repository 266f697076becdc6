"""Cand(q): the query pipeline's candidate pool before BETR, the same generator at training and
inference (SR-RAG App. B.8): every shortlisted window with its fine score s(q, d), grade and gold flag."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from ebm_platform.retrieval.pipeline import Retriever

POOL_SCHEMA = {"question_id": pl.String, "condition": pl.String, "window_id": pl.String, "s": pl.Float64,
               "grade": pl.String, "gold": pl.Boolean, "scorer": pl.String}


def candidate_pools(retriever: Retriever, questions: pl.DataFrame,
                    progress: Callable[[str], None] | None = None) -> pl.DataFrame:
    """Pools for every question with gold windows (BETR is switched off while generating them), over
    every condition as `ebm ask` runs by default; `scorer` names the fine scorer that gave s."""
    saved, retriever.betr = retriever.betr, None
    rows = []
    try:
        items = questions.filter(pl.col("gold_window_ids").list.len() > 0)
        for n, q in enumerate(items.iter_rows(named=True), 1):
            result = retriever.retrieve(q["question"], "sr_rag")
            gold = set(q["gold_window_ids"])
            rows += [{"question_id": q["question_id"], "condition": q["condition"], "window_id": c.window_id,
                      "s": float(c.s), "grade": c.grade, "gold": c.window_id in gold,
                      "scorer": result.notes["fine_scorer"]}
                     for c in result.considered if c.s is not None]
            if progress and n % 25 == 0:
                progress(f"candidate pools: {n}/{items.height} questions")
    finally:
        retriever.betr = saved
    return pl.DataFrame(rows, schema=POOL_SCHEMA) if rows else pl.DataFrame(schema=POOL_SCHEMA)
