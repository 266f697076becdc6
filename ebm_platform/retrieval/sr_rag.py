"""SR-RAG: PICO anchors -> channels (dense, full text, graph, PICO-HyDE) per grade pool -> RRF ->
pool quotas -> every candidate's features (pipeline.gather) -> fine s(q, d): the learned LambdaRank
model when the lake holds one that passed its gate, else the hand-set cos + 0.4 * coverage (or a
cross-encoder when EBM_CROSS_ENCODER names one) -> BETR r = a*s + u(grade), applied only when
fitted for this same scorer -> evidence budget 12. Ablations `sr_rag_<lever>` switch one lever off.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ebm_platform.retrieval.pipeline import Laps, PipelineParams, Retrieval, Retriever, Strategy, gather

ABLATIONS = {
    "no_graph": {"graph_channel": False},
    "no_hyde": {"hyde_channel": False},
    "one_pool": {"grade_pools": False},
    "hand_set": {"learned_scorer": False},
    "no_betr": {"betr": False},
    "no_colbert": {"colbert": False},
}


def sr_rag(
    r: Retriever, question: str, conditions: list[str] | None, p: PipelineParams | None = None, name: str = "sr_rag"
) -> Retrieval:
    p = p or r.params
    laps = Laps()
    merged, view, hyde_mode = gather(r, question, conditions, p, laps)
    scorer = r.reranker.fine_name(p.learned_scorer)
    betr, betr_note = r.betr_for(scorer) if p.betr else (None, "switched off (ablation)")
    if merged:
        fine = r.reranker.fine(
            question, [c.row["text"] for c in merged], np.stack([c.features for c in merged]), p.learned_scorer
        )
        for c, s in zip(merged, fine):
            c.s = s
            c.final = betr.score(s, c.grade) if betr else s
            c.grade_adjustment = c.final - s
    chosen = sorted(merged, key=lambda c: (-c.final, c.window_id))[: p.budget]
    laps.lap("rerank")
    return Retrieval(
        question,
        name,
        view.vector,
        view.anchors,
        chosen,
        merged,
        laps.timings,
        {
            "fine_scorer": scorer,
            "betr": betr_note,
            "hyde": hyde_mode,
            "graph_channel": ("on" if r.graph else "off (no knowledge graph in this lake)")
            if p.graph_channel
            else "switched off (ablation)",
            "grade_pools": "A and B-E" if p.grade_pools else "one pool (ablation)",
            "colbert_maxsim": "feature on" if p.colbert else "skipped (ablation; the feature reads as missing)",
        },
    )


def _ablation(levers: dict, name: str) -> Strategy:
    def run(r: Retriever, question: str, conditions: list[str] | None) -> Retrieval:
        return sr_rag(r, question, conditions, replace(r.params, **levers), name)

    return run


SR_RAG_STRATEGIES: dict[str, Strategy] = {
    "sr_rag": sr_rag,
    **{f"sr_rag_{lever}": _ablation(levers, f"sr_rag_{lever}") for lever, levers in ABLATIONS.items()},
}
