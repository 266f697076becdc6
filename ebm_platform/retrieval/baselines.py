"""The same-run anchors every figure is printed beside: `bm25` (the full-text channel alone), `dense`
(the dense channel alone) and `hybrid` (RRF of the two; `naive` is the same ranking under the
paper's name, Naive RAG)."""

from __future__ import annotations

from ebm_platform.retrieval.fusion import rrf, top
from ebm_platform.retrieval.pipeline import Candidate, Laps, Retrieval, Retriever, Strategy, channel_rankings, fill_rows
from ebm_platform.retrieval.questions import question_anchors


def anchor_strategy(channels: tuple[str, ...], name: str) -> Strategy:
    """A same-run anchor: one channel alone, or the RRF of the dense and full-text channels."""

    def run(r: Retriever, question: str, conditions: list[str] | None) -> Retrieval:
        laps = Laps()
        rows: dict[str, dict] = {}
        qvec = r._embed([question])[0]
        laps.lap("encode")
        rankings = channel_rankings(r.index, r.text_channel, question, qvec, channels, r.params.dense, conditions, rows)
        laps.lap("search")
        scores, ranks = rrf(rankings, r.params.rrf_k)
        candidates = [
            Candidate(w, rows[w], channel_ranks=ranks[w], fused=scores[w], s=scores[w], final=scores[w])
            for w in fill_rows(r.index, top(scores, r.params.budget), conditions, rows)
        ]
        laps.lap("fusion")
        return Retrieval(
            question,
            name,
            qvec,
            question_anchors(question, r.condition_names),
            candidates,
            candidates,
            laps.timings,
            {
                "fine_scorer": "none (channel order)" if len(channels) == 1 else "none (RRF order)",
                "betr": "not applied",
            },
        )

    return run


BASELINES: dict[str, Strategy] = {
    "naive": anchor_strategy(("dense", "full_text"), "naive"),
    "bm25": anchor_strategy(("full_text",), "bm25"),
    "dense": anchor_strategy(("dense",), "dense"),
    "hybrid": anchor_strategy(("dense", "full_text"), "hybrid"),
}
