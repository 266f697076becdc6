"""Reranking quality at K (SR-RAG Table 1), computed per query over its candidate pool and averaged.

Grade score: A=5, B=4, C=3, D=2, E=1 (higher is better, the paper's scale).
- AvgGrade: mean grade score of the gold windows in the top K (queries with a gold window in the top K).
- HGSR: share of the gold windows in the top K that are grade A or B (same queries).
- SA-NDCG@K: NDCG with gain = gold(d) * score(grade(d)) / 5 (support-aware: only gold windows gain,
  higher grades gain more); the ideal ordering is over the whole pool.
- PrefAcc: share of (gold, non-gold) pairs of the pool that the ranking orders gold first.
Rankers: Semantic-only (s), Heuristic (s - c * rank(grade), rank A=0 ... E=4) and BETR (a*s + u(grade)).
The ceiling is the ideal order (every gold window first, higher grades first among them): of the orders
whose top K holds as many gold windows as it can, it has the highest AvgGrade and HGSR (a ranker that
pushes lower-grade gold windows out of the top K raises HGSR and loses SA-NDCG).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

SCORE = {"A": 5, "B": 4, "C": 3, "D": 2, "E": 1}
RANK = {"A": 0, "B": 1, "C": 2, "D": 3, "E": 4}
PAPER = {
    "Semantic-only": {"AvgGrade": 3.18, "HGSR": 0.362, "SA-NDCG": 0.781, "PrefAcc": 0.523},
    "Heuristic": {"AvgGrade": 3.34, "HGSR": 0.418, "SA-NDCG": 0.814, "PrefAcc": 0.586},
    "BETR": {"AvgGrade": 3.51, "HGSR": 0.473, "SA-NDCG": 0.847, "PrefAcc": 0.641},
}

Ranker = Callable[[np.ndarray, list[str]], np.ndarray]


def semantic(s: np.ndarray, grades: list[str]) -> np.ndarray:
    return s


def heuristic(c: float) -> Ranker:
    return lambda s, grades: s - c * np.array([RANK[g] for g in grades])


def betr(a: float, u: dict[str, float]) -> Ranker:
    return lambda s, grades: a * s + np.array([u[g] for g in grades])


def query_metrics(s: np.ndarray, grades: list[str], gold: np.ndarray, ranker: Ranker, k: int = 12) -> dict[str, float]:
    order = np.argsort(-ranker(s, grades), kind="stable")
    top = order[:k]
    gains = np.array([SCORE[g] / 5 for g in grades]) * gold
    dcg = float(np.sum(gains[top] / np.log2(np.arange(2, len(top) + 2))))
    ideal = np.sort(gains)[::-1][:k]
    idcg = float(np.sum(ideal / np.log2(np.arange(2, len(ideal) + 2))))
    gold_top = [i for i in top if gold[i]]
    scores = ranker(s, grades)
    pos, neg = scores[gold.astype(bool)], scores[~gold.astype(bool)]
    pref = float(np.mean(pos[:, None] > neg[None, :])) if len(pos) and len(neg) else np.nan
    return {
        "AvgGrade": float(np.mean([SCORE[grades[i]] for i in gold_top])) if gold_top else np.nan,
        "HGSR": float(np.mean([grades[i] in ("A", "B") for i in gold_top])) if gold_top else np.nan,
        "SA-NDCG": dcg / idcg if idcg else np.nan,
        "PrefAcc": pref,
    }


def evaluate(pools: pl.DataFrame, ranker: Ranker, k: int = 12) -> dict[str, float]:
    """Mean of each metric over the queries where it is defined."""
    per_query = []
    for _, group in pools.group_by("question_id"):
        per_query.append(
            query_metrics(
                group["s"].to_numpy(), group["grade"].to_list(), group["gold"].to_numpy().astype(float), ranker, k
            )
        )
    if not per_query:
        return {m: float("nan") for m in ("AvgGrade", "HGSR", "SA-NDCG", "PrefAcc")} | {"queries": 0}
    return {
        m: round(float(np.nanmean([q[m] for q in per_query])), 4)
        if not all(np.isnan(q[m]) for q in per_query)
        else float("nan")
        for m in per_query[0]
    } | {"queries": len(per_query)}


def ceiling(pools: pl.DataFrame, k: int = 12) -> dict[str, float]:
    """The metrics of the ideal order: every gold window first, higher grades first among them, then
    by s (each pool's s turned into its rank share, below one grade step)."""
    grade_rank = pl.col("grade").replace_strict(RANK, return_dtype=pl.Int64)
    oracle = pools.with_columns(
        s=pl.col("gold").cast(pl.Float64) * 10
        + pl.when(pl.col("gold")).then(4 - grade_rank).otherwise(0)
        + pl.col("s").rank().over("question_id") / (pl.len().over("question_id") + 1)
    )
    return evaluate(oracle, semantic, k)


def tune_heuristic(
    pools: pl.DataFrame, grid: tuple[float, ...] = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0), k: int = 12
) -> float:
    """c maximising SA-NDCG@K on the validation pools (ties: smaller c)."""
    scored = [(evaluate(pools, heuristic(c), k)["SA-NDCG"], -c) for c in grid]
    scored = [(0.0 if np.isnan(v) else v, c) for v, c in scored]
    return -max(scored)[1]
