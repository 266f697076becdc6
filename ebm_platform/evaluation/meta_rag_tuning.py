"""META-RAG's open constants chosen on training questions (methods.md section 3 gives no values
for a, b, c, v, M, R_c). Each question's articles are read once (meta_rag.gather_evidence); every
point of GRID then only re-ranks them (meta_rag.rank_articles) and is scored by MRR, then R@10,
on the same questions. The questions are Evidence Inference train prompts the lake's learned
reranker was not trained on, so the fine score that breaks ties inside an article is out of sample."""

from __future__ import annotations

import itertools
import random
from typing import Callable

from ebm_platform.evaluation.retrieval_eval import TRAIN_QUESTIONS, ranked_metrics
from ebm_platform.retrieval.meta_rag import ArticleEvidence, MetaRagConstants, gather_evidence, rank_articles
from ebm_platform.retrieval.pipeline import Retriever

# a, b, c > 0: the method's premise is that every reliability term counts; scaling all three
# together only moves r against R_c, which R_c's own range covers
GRID = {"a": (0.5, 1.0, 2.0), "b": (0.25, 0.5, 1.0), "c": (0.25, 0.5, 1.0), "v": (0.05, 0.25),
        "m": (0.25, 0.5, 1.0), "r_c": (2.0, 3.0, 4.5, 6.0)}


def tuning_items(train_items: list[dict], limit: int) -> list[dict]:
    """`limit` train questions after the reranker's seeded sample (retrieval_eval.ensure_reranker)."""
    items = list(train_items)
    random.Random(13).shuffle(items)
    return items[TRAIN_QUESTIONS: TRAIN_QUESTIONS + limit]


def score(evidence: list[ArticleEvidence], items: list[dict], constants: MetaRagConstants, budget: int,
          k: int = 10) -> dict[str, float]:
    """MRR, R@k and Hit@k of META-RAG's ranking under `constants`."""
    rankings = [[c.window_id for c in rank_articles(e, constants, budget, "offline").candidates] for e in evidence]
    return ranked_metrics(rankings, items, k)


def choose_constants(retriever: Retriever, items: list[dict], baseline: MetaRagConstants,
                     progress: Callable[[str], None] = print) -> dict:
    """Every GRID point scored on `items`; the best by (MRR, R@10) and the `baseline` (today's
    settings) on the same questions."""
    evidence = []
    for n, item in enumerate(items, 1):
        evidence.append(gather_evidence(retriever, item["question"], None))
        if n % 50 == 0:
            progress(f"meta_rag tuning: read the articles of {n}/{len(items)} questions")
    budget = retriever.params.budget
    rows = []
    for values in itertools.product(*GRID.values()):
        constants = MetaRagConstants(*values)
        rows.append({**dict(zip(GRID, values)), **score(evidence, items, constants, budget)})
    rows.sort(key=lambda row: (-row["MRR"], -row["R@10"]))
    return {"questions": len(items), "grid_points": len(rows), "chosen": rows[0], "top": rows[:5],
            "baseline": {**baseline.__dict__, **score(evidence, items, baseline, budget)},
            "worst": rows[-1]}
