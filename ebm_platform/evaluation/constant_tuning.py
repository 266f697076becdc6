"""The seed strategies' open constants chosen on training questions: META-RAG's a, b, c, v, M, R_c
(methods.md section 3 gives no values), Med-R2's coarse_k and prototype temperature and CLAIMS'
window count (the papers name none of them). What a strategy reads per question is gathered once (meta_rag.gather_evidence,
med_r2.gather_candidates); every point of its grid then only re-ranks it and is scored by MRR, then
R@10, on the same questions. The questions are Evidence Inference train prompts the lake's learned
reranker was not trained on, so the fine score the strategies lean on is out of sample there."""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from ebm_platform.evaluation.retrieval_eval import TRAIN_QUESTIONS, ranked_metrics
from ebm_platform.retrieval.claims import ClaimsConstants, claim_graph, gather_claims
from ebm_platform.retrieval.med_r2 import MedR2Constants, choose, gather_candidates
from ebm_platform.retrieval.meta_rag import MetaRagConstants, gather_evidence, rank_articles
from ebm_platform.retrieval.pipeline import Candidate, Retriever

_CLAIMS_WINDOWS = (10, 20, 30)


@dataclass(frozen=True)
class Tunable:
    """A strategy's grid, its constants type, what it reads once per question and how it ranks that."""

    grid: dict[str, tuple]
    constants: type
    gather: Callable[[Retriever, str], object]
    rank: Callable[[Retriever, object, object], list[Candidate]]


TUNABLE = {
    # a, b, c > 0: the method's premise is that every reliability term counts; scaling all three
    # together only moves r against R_c, whose own range covers that
    "meta_rag": Tunable(
        {
            "a": (0.5, 1.0, 2.0),
            "b": (0.25, 0.5, 1.0),
            "c": (0.25, 0.5, 1.0),
            "v": (0.05, 0.25),
            "m": (0.25, 0.5, 1.0),
            "r_c": (2.0, 3.0, 4.5, 6.0),
        },
        MetaRagConstants,
        lambda r, q: gather_evidence(r, q, None),
        lambda r, e, k: rank_articles(e, k, r.params.budget, "offline").candidates,
    ),
    "med_r2": Tunable(
        {"coarse_k": (10, 20, 30, 40), "temperature": (0.02, 0.05, 0.1, 0.2)},
        MedR2Constants,
        lambda r, q: gather_candidates(r, q, None),
        lambda r, e, k: choose(r, e.ranked[: k.coarse_k], e.expected, k)[1],
    ),
    "claims": Tunable(
        {"windows": _CLAIMS_WINDOWS},
        ClaimsConstants,
        lambda r, q: gather_claims(r, q, None, max(_CLAIMS_WINDOWS)),
        lambda r, e, k: claim_graph(r, e, k).candidates,
    ),
}


def tuning_items(train_items: list[dict], limit: int) -> list[dict]:
    """`limit` train questions after the reranker's seeded sample (retrieval_eval.ensure_reranker)."""
    items = list(train_items)
    random.Random(13).shuffle(items)
    return items[TRAIN_QUESTIONS : TRAIN_QUESTIONS + limit]


def choose_constants(
    strategy: str, retriever: Retriever, items: list[dict], baseline: object, progress: Callable[[str], None] = print
) -> dict:
    """Every grid point of `strategy` scored on `items`; the best by (MRR, R@10, then fewest
    changes from `baseline`), the worst, and the `baseline` constants (today's settings) on the
    same questions."""
    tunable = TUNABLE[strategy]
    gathered = []
    for n, item in enumerate(items, 1):
        gathered.append(tunable.gather(retriever, item["question"]))
        if n % 50 == 0:
            progress(f"{strategy} tuning: read {n}/{len(items)} questions")

    def metrics(constants: object) -> dict[str, float]:
        return ranked_metrics([[c.window_id for c in tunable.rank(retriever, g, constants)] for g in gathered], items)

    points = list(itertools.product(*tunable.grid.values()))
    rows, started = [], time.perf_counter()
    for n, values in enumerate(points, 1):
        rows.append({**dict(zip(tunable.grid, values)), **metrics(tunable.constants(*values))})
        if n % 25 == 0 or n == len(points):
            rate = n / max(time.perf_counter() - started, 1e-9)
            progress(
                f"{strategy} tuning: scored {n}/{len(points)} grid points ({rate:.1f}/s, "
                f"{(len(points) - n) / rate:.0f} s left)"
            )
    # ties (a constant the questions cannot tell apart) keep the baseline's value: change only what the data asks
    rows.sort(key=lambda row: (-row["MRR"], -row["R@10"], sum(row[n] != getattr(baseline, n) for n in tunable.grid)))
    return {
        "strategy": strategy,
        "questions": len(items),
        "grid_points": len(rows),
        "chosen": rows[0],
        "top": rows[:5],
        "baseline": {**baseline.__dict__, **metrics(baseline)},
        "worst": rows[-1],
    }
