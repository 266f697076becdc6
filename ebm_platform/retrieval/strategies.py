"""Every strategy `ebm ask` and `ebm eval` know, by name, and `retrieve`, which runs one.

SR-RAG and its ablations are in sr_rag.py, the same-run anchors in baselines.py, the four other
seed systems each in their own module. Each takes (retriever, question, conditions) and returns
the same `Retrieval`, so answers and evaluation treat them alike.
"""

from __future__ import annotations

from ebm_platform.retrieval.baselines import BASELINES
from ebm_platform.retrieval.claims import claims
from ebm_platform.retrieval.kg_refine import KG_REFINE_ABLATIONS, kg_refine_strategy
from ebm_platform.retrieval.med_r2 import med_r2
from ebm_platform.retrieval.meta_rag import meta_rag
from ebm_platform.retrieval.pipeline import QuestionError, Retrieval, Retriever, Strategy, validate_question
from ebm_platform.retrieval.sr_rag import SR_RAG_STRATEGIES

STRATEGIES: dict[str, Strategy] = {
    "sr_rag": SR_RAG_STRATEGIES["sr_rag"],
    **BASELINES,
    **{name: run for name, run in SR_RAG_STRATEGIES.items() if name != "sr_rag"},
    "med_r2": med_r2,
    "meta_rag": meta_rag,
    "claims": claims,
    "kg_refine": kg_refine_strategy("kg_refine"),
    **{
        f"kg_refine_{flag}": kg_refine_strategy(f"kg_refine_{flag}", **levers)
        for flag, levers in KG_REFINE_ABLATIONS.items()
    },
}


def strategy_list(spec: str) -> list[str]:
    """`all` (every registered strategy, in registry order) or a comma-separated list of registered names."""
    if spec.strip() == "all":
        return list(STRATEGIES)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [s for s in names if s not in STRATEGIES]
    if unknown or not names:
        raise ValueError(f"unknown strategies {unknown or 'none given'}; choose from all, {', '.join(STRATEGIES)}")
    return names


def retrieve(
    retriever: Retriever, question: str, strategy: str = "sr_rag", conditions: list[str] | None = None
) -> Retrieval:
    """Run one registered strategy on the retriever's lake (a question that is not usable text, or
    an unknown strategy, raises QuestionError)."""
    question = validate_question(question)
    if strategy not in STRATEGIES:
        raise QuestionError(f"unknown strategy {strategy!r}; choose one of {', '.join(sorted(STRATEGIES))}")
    return STRATEGIES[strategy](retriever, question, conditions)
