"""SR-RAG: PICO anchors -> channels (dense, full text, graph, PICO-HyDE) per grade pool -> RRF ->
pool quotas -> every candidate's features (pipeline.gather) -> fine s(q, d): the learned LambdaRank
model when the lake holds one that passed its gate, else the hand-set cos + 0.4 * coverage (or a
cross-encoder when EBM_CROSS_ENCODER names one) -> BETR r = a*s + u(grade), applied only when
fitted for this same scorer -> evidence budget 12, whose last place goes to the best-ranked
guideline recommendation about the question's arms when none of the twelve is one
(`guideline_slot`), and the place before it to the best-ranked systematic review's finding about the
question when none of them is one (`review_slot`). A question about a condition this lake holds evidence of is answered from that
condition's partition and the guideline sets that serve every condition (`question_scope`), the other
conditions filling up only when it holds fewer candidates than the budget. Ablations `sr_rag_<lever>`
switch one lever off.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ebm_platform.conditions import active_catalogue
from ebm_platform.corpus.windows import sentence_spans
from ebm_platform.retrieval.findings import is_finding, names_every_arm_word, recommends_about_arms, states_about
from ebm_platform.retrieval.pipeline import (
    Candidate,
    Laps,
    PipelineParams,
    QueryView,
    Retrieval,
    Retriever,
    Strategy,
    gather,
)
from ebm_platform.retrieval.questions import question_anchors
from ebm_platform.vocabulary import Anchors

ABLATIONS = {
    "no_graph": {"graph_channel": False},
    "no_hyde": {"hyde_channel": False},
    "one_pool": {"grade_pools": False},
    "hand_set": {"learned_scorer": False},
    "no_betr": {"betr": False},
    "no_colbert": {"colbert": False},
    "no_guideline_slot": {"guideline_slot": False},
    "no_review_slot": {"review_slot": False},
    "no_condition_scope": {"condition_scope": False},
}


def recommends_on_arms(text: str, anchors: Anchors) -> bool:
    """Whether a window states a recommendation (`findings.recommends`) about the question's arms
    (`findings.about_arms`) in one of its sentences."""
    return any(recommends_about_arms(text[a:b], anchors) for a, b in sentence_spans(text))


def question_condition(anchors: Anchors, conditions: list[str] | None) -> str | None:
    """The condition code the question is about: the one asked for, else the one whose name its text
    names, else the only one whose catalogue terms its anchors match ("lateral epicondylitis" is a term of
    Lateral elbow tendinopathy: the demo's platelet-rich plasma question was answered from a low back
    pain guideline's recommendation without a word on the condition)."""
    if conditions and len(conditions) == 1:
        return conditions[0]
    catalogue = active_catalogue().conditions
    named = anchors.condition
    by_name = next((c.code for c in catalogue if c.name.lower() == named), None) if named else None
    if by_name:
        return by_name
    text = " ".join(anchors.terms)
    matched = [c.code for c in catalogue if c.matches(text)]
    return matched[0] if len(matched) == 1 else None


def condition_named(anchors: Anchors, code: str | None) -> Anchors:
    """The anchors with their condition filled in when the question's outcome is a catalogue term of the
    condition `code` it is about: "Is hip arthroscopy better than physiotherapy for femoroacetabular
    impingement?" names no outcome, and its bottom line read "Hip arthroscopy increased femoroacetabular
    impingement" (the verdict was the iHOT-33 score's). Unchanged otherwise."""
    catalogue = active_catalogue()
    if anchors.condition or not code or not anchors.outcome or code not in catalogue.codes:
        return anchors
    return replace(anchors, condition=anchors.outcome) if catalogue.get(code).matches(anchors.outcome) else anchors


def question_scope(r: Retriever, question: str, conditions: list[str] | None) -> tuple[list[str] | None, str]:
    """The partitions SR-RAG answers a question from, and a note saying which: the ones asked for; else,
    when the question is about a condition (`question_condition`) this lake holds windows of, that
    condition and the guideline sets that serve every condition (the catalogue's grade-restricted sets,
    GL-GEN and GL-SP); else every partition. (The demo's patellofemoral question, asked of every
    partition, cited six knee osteoarthritis windows before the patellofemoral trial and reviews.)"""
    if conditions:
        return conditions, f"{', '.join(conditions)} (asked for)"
    code = question_condition(question_anchors(question, r.condition_names), None)
    if not code:
        return None, "every condition (the question names none)"
    if not r.window_counts.get(code):
        return None, f"every condition (this lake holds no evidence of {code}, the question's condition)"
    sets = [c.code for c in active_catalogue().conditions if c.requires_grade and c.code != code]
    return [code, *sets], f"{code} (the question's condition)" + (
        f" and the guideline sets {', '.join(sets)}" if sets else ""
    )


def scoped_gather(
    r: Retriever, question: str, conditions: list[str] | None, p: PipelineParams, laps: Laps
) -> tuple[list[Candidate], QueryView, str, list[str] | None, str]:
    """`gather` over the question's scope (`question_scope`, when `p.condition_scope`), in-scope candidates
    first; when the scope holds fewer than the budget, every partition's candidates fill up after them.
    Returns the candidates, the query view, the HyDE mode, the scope and its note."""
    scope, note = (
        question_scope(r, question, conditions)
        if p.condition_scope or conditions
        else (None, "every condition: switched off (ablation)")
    )
    merged, view, hyde_mode = gather(r, question, scope, p, laps)
    if scope != conditions and len(merged) < p.budget:
        have = {c.window_id for c in merged}
        wider = [c for c in gather(r, question, conditions, p, laps)[0] if c.window_id not in have]
        for c in wider:
            c.outside_scope = True
        merged += wider
        note += f"; it holds {len(have)} candidates, so the other conditions' follow them"
    return merged, view, hyde_mode, scope, note


def reviews_on_question(text: str, section: str | None, title: str, anchors: Anchors) -> bool:
    """Whether a window states, in one of its sentences, a finding (`findings.is_finding`) about the question's
    intervention and outcome (`findings.states_about`: what the offline stage-3 judge reads as supportive) that
    names every word telling its arms apart (`findings.names_every_arm_word`: a review of "manipulation and
    mobilisation" for "anteroposterior MM", whose "MM" its "6/100 mm" names, does not)."""
    return any(
        is_finding(text[a:b], section)
        and names_every_arm_word(text[a:b], anchors)
        and states_about(text[a:b], title, anchors)
        for a, b in sentence_spans(text)
    )


def with_syntheses(
    ranked: list[Candidate],
    budget: int,
    anchors: Anchors,
    condition: str | None,
    guideline: bool = True,
    review: bool = True,
) -> list[Candidate]:
    """The first `budget` of `ranked`; when none of them is a guideline recommendation on the question's
    arms, the last place goes to the best-ranked grade-A window of the question's condition (any, when
    the question names none) that recommends on them: a guideline window that is cited but states no
    such recommendation (its background, another recommendation) does not keep it out (a build whose
    reranker ranked the WHO guideline's introduction eleventh answered the exercise question without
    WHO's exercise recommendation). Likewise, with `review`, the place before it goes to the best-ranked
    systematic review (grade B) of the question's condition (only when the question names one) that states a
    finding about the question (`reviews_on_question`) when none of the budget does (the demo's "Does exercise reduce pain in knee osteoarthritis?" cited
    twelve windows of three trials and ranked Cochrane's CD004376, "land-based therapeutic exercise has at
    least short term benefit in terms of reduced knee pain", fifteenth). (SR-RAG keeps grade pools so
    that high-grade evidence is not diluted; on this platform's benchmark BETR learns no grade offset,
    docs/evaluation.md, so a guideline's recommendation or a review's finding about the question can rank
    just below the budget.) The evaluation's R@10 reads the first ten and is not changed by them."""
    chosen = ranked[:budget]
    wanted = [
        lambda c: c.grade == "A" and recommends_on_arms(c.row["text"], anchors),
        lambda c: (
            c.grade == "B"
            and reviews_on_question(c.row["text"], c.row.get("section"), c.row.get("title") or "", anchors)
        ),
    ]
    picks: list[Candidate] = []
    # a review only for a question about a condition, from that condition's partition: a review of shock wave
    # therapy for elbow pain does not answer a question about shock wave therapy that names no condition
    for on, synthesis, any_condition in zip((guideline, review), wanted, (True, False)):
        if not on or not chosen or any(synthesis(c) for c in chosen) or (condition is None and not any_condition):
            continue
        pick = next((c for c in ranked[budget:] if condition in (None, c.row.get("condition")) and synthesis(c)), None)
        if pick is not None:
            picks.insert(0, pick)  # the guideline last, the review before it
    return chosen[: budget - len(picks)] + picks


def sr_rag(
    r: Retriever, question: str, conditions: list[str] | None, p: PipelineParams | None = None, name: str = "sr_rag"
) -> Retrieval:
    p = p or r.params
    laps = Laps()
    merged, view, hyde_mode, scope, scope_note = scoped_gather(r, question, conditions, p, laps)
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
    ranked = sorted(merged, key=lambda c: (c.outside_scope, -c.final, c.window_id))
    chosen = with_syntheses(
        ranked,
        p.budget,
        view.anchors,
        question_condition(view.anchors, conditions),
        p.guideline_slot,
        p.review_slot,
    )
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
            "guideline_slot": "on" if p.guideline_slot else "switched off (ablation)",
            "review_slot": "on" if p.review_slot else "switched off (ablation)",
            "scope": scope_note,
        },
        scope=scope,
    )


def _ablation(levers: dict, name: str) -> Strategy:
    def run(r: Retriever, question: str, conditions: list[str] | None) -> Retrieval:
        return sr_rag(r, question, conditions, replace(r.params, **levers), name)

    return run


SR_RAG_STRATEGIES: dict[str, Strategy] = {
    "sr_rag": sr_rag,
    **{f"sr_rag_{lever}": _ablation(levers, f"sr_rag_{lever}") for lever, levers in ABLATIONS.items()},
}
