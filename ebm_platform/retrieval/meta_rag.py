"""META-RAG (seeds/meta-rag.txt; methods.md section 3): reliability, heterogeneity, extrapolation.

1. Pool: the POOL_ARTICLES best articles of the hybrid channels (each article ranked by its best
   window's RRF score over dense + full text; scored_candidates).
2. Reliability r = a*Date + b*Pub + c*Exp. Date: 1 for articles within DATE_TIER_YEARS of the
   pool's newest, then DATE_STEP less per further tier (the paper's extra point for the most
   recent, decreasing in tiers). Pub: publication-type tier 7..1 (corpus/grading.py
   publication_tier). Exp: the paper's three limitation questions (ethnic or biological
   limitation? particular regional population? limitations clearly stated?), one point per
   reassuring answer (no, no, yes): LLM when set, offline by rules over the article's limitation
   sentences.
3. Heterogeneity per claim (claim j = the question + outcome direction j: increased, decreased,
   no difference): stance y_i = 1 supports, 0 opposes (another direction), NaN irrelevant. Offline
   the stance is the verdict (retrieval/verdict.py) of the article's best sentences for the
   question; LLM when set. DerSimonian-Laird with constant variance v, leave-one-out Delta_i;
   an article is kept (Algorithm 1) when for some claim Delta_i < M or r_i > R_c. An article with
   no stance on any claim takes no part in the test and is kept.
4. Extrapolation T = (T_p + T_i + T_o) / n over the question's stated P, I, O anchors: each the best
   cosine between the anchor and the article's own entities of that type in the knowledge graph
   (LLM when set); with no anchor, the cosine of question and title. S = r^2 * T.
5. Windows of the kept articles ranked by S, then by the fine score.
Steps 1-4 gather what the articles say (gather_evidence); the constants a, b, c, v, M, R_c
(MetaRagConstants, from Settings) apply only in rank_articles, so tuning them re-ranks without
re-reading the articles.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ebm_platform.corpus.grading import publication_tier
from ebm_platform.corpus.windows import flatten
from ebm_platform.llm.prompts import fill
from ebm_platform.retrieval.features import QueryView
from ebm_platform.retrieval.graph_reads import document_entities, entity_vectors
from ebm_platform.retrieval.pipeline import Candidate, Laps, Retrieval, Retriever, scored_candidates
from ebm_platform.retrieval.verdict import DECREASED, INCREASED, INSUFFICIENT, NO_DIFFERENCE, read_verdict
from ebm_platform.settings import Settings, get_settings

POOL_ARTICLES = 15
DATE_TIER_YEARS, DATE_STEP = 5, 0.25
CLAIMS = (INCREASED, DECREASED, NO_DIFFERENCE)
STANCE_SENTENCES = 3

_LIMITATION = re.compile(r"\blimitations?\b|\blimited by\b|\bcaution\b|\bgenerali[sz]", re.I)
_BIOLOGICAL = re.compile(
    r"\bethnic|\brace\b|\bracial|\bcaucasian|\basian\b|\bchinese\b|\bjapanese\b|\bafrican|"
    r"\bhispanic|\bsex\b|\bgender|\bonly (?:men|women|males|females)|\bgenetic",
    re.I,
)
_REGIONAL = re.compile(
    r"\bsingle[- ]cent(?:er|re)|\bone (?:hospital|cent(?:er|re)|region|country|city)|"
    r"\b(?:a|one) single (?:hospital|clinic|site)|\blocal population|\bin (?:one|a single) "
    r"(?:region|country)|\brural\b",
    re.I,
)


def dersimonian_laird(y: np.ndarray, v: np.ndarray) -> float:
    """tau^2_DL = max((Q - (k - 1)) / (sum w - sum w^2 / sum w), 0) with w = 1 / v."""
    if len(y) < 2:
        return 0.0
    w = 1.0 / v
    theta = float((w * y).sum() / w.sum())
    q = float((w * (y - theta) ** 2).sum())
    denominator = float(w.sum() - (w**2).sum() / w.sum())
    return max((q - (len(y) - 1)) / denominator, 0.0) if denominator > 0 else 0.0


def leave_one_out(y: np.ndarray, v: np.ndarray) -> tuple[float, np.ndarray]:
    """tau^2 and each study's Delta_i = (tau^2 - tau^2_(-i)) / tau^2 (0 for all when tau^2 = 0)."""
    tau2 = dersimonian_laird(y, v)
    if tau2 == 0.0:
        return 0.0, np.zeros(len(y))
    keep = np.ones(len(y), dtype=bool)
    deltas = []
    for i in range(len(y)):
        keep[i] = False
        deltas.append((tau2 - dersimonian_laird(y[keep], v[keep])) / tau2)
        keep[i] = True
    return tau2, np.array(deltas)


@dataclass(frozen=True)
class MetaRagConstants:
    """The paper gives no values (methods.md section 3): r = a*Date + b*Pub + c*Exp; v, the constant
    per-study variance (the articles report no standard errors); M, the largest leave-one-out
    contribution Delta_i an article may make; R_c, the reliability that keeps it anyway. Defaults
    in Settings (EBM_META_RAG_A ... EBM_META_RAG_R_C) were chosen on Evidence Inference train
    questions by `ebm eval tune --strategy meta_rag` (evaluation/constant_tuning.py)."""

    a: float
    b: float
    c: float
    v: float
    m: float
    r_c: float

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> MetaRagConstants:
        s = settings or get_settings()
        return cls(s.meta_rag_a, s.meta_rag_b, s.meta_rag_c, s.meta_rag_v, s.meta_rag_m, s.meta_rag_r_c)


def heterogeneity_filter(
    stances: list[str], reliability: list[float], v: float, m: float, r_c: float
) -> tuple[list[bool], list[dict]]:
    """Algorithm 1: per claim, y and Delta_i; an article is kept when some claim keeps it
    (Delta_i < M, or Delta_i >= M and r_i > R_c). Returns keep flags and each article's trace."""
    keep = [stance not in CLAIMS for stance in stances]  # no stance on any claim: not part of the test
    trace: list[dict] = [{"stance": stance, "delta": {}} for stance in stances]
    members = [i for i, stance in enumerate(stances) if stance in CLAIMS]
    for claim in CLAIMS:
        if claim not in stances:  # a direction no article reports is no claim to test
            continue
        y = np.array([1.0 if stances[i] == claim else 0.0 for i in members])
        tau2, deltas = leave_one_out(y, np.full(len(y), v))
        for i, delta in zip(members, deltas):
            trace[i]["delta"][claim] = round(float(delta), 4)
            trace[i].setdefault("tau2", {})[claim] = round(tau2, 4)
            if delta < m or reliability[i] > r_c:
                keep[i] = True
    return keep, trace


def date_score(year: int | None, newest: int | None) -> float:
    """1 within DATE_TIER_YEARS of the newest article, DATE_STEP less per further tier, 0 when unknown."""
    if year is None or newest is None:
        return 0.0
    return max(1.0 - DATE_STEP * ((newest - year) // DATE_TIER_YEARS), 0.0)


def reliability(date: float, pub: float, exp: float, weights: tuple[float, float, float]) -> float:
    """r = a*Date + b*Pub + c*Exp."""
    a, b, c = weights
    return a * date + b * pub + c * exp


def ranking_score(r: float, t: float) -> float:
    """S = r^2 * T."""
    return r * r * t


def extrapolation(similarities: dict[str, float]) -> float:
    """T = the mean of T_p, T_i, T_o over the anchors the question states (equal weights)."""
    return float(np.mean(list(similarities.values()))) if similarities else 0.0


def limitation_sentences(text: str) -> list[str]:
    """The article's sentences that state a limitation."""
    return [s for s in re.split(r"(?<=[.!?])\s+", flatten(text or "")) if _LIMITATION.search(s)]


def experiment_answers_offline(text: str, sentences: list[str]) -> dict[str, bool]:
    """The three limitation questions, by rules over the article's limitation `sentences` (of `text`)."""
    block = " ".join(sentences)
    return {
        "biological_limitation": bool(_BIOLOGICAL.search(block)),
        "regional_population": bool(_REGIONAL.search(block) or _REGIONAL.search(text or "")),
        "limitations_stated": bool(sentences),
    }


def experiment_score(answers: dict[str, bool]) -> float:
    """One point per reassuring answer: no, no, yes."""
    return float(
        (not answers["biological_limitation"]) + (not answers["regional_population"]) + answers["limitations_stated"]
    )


EXP_PROMPT = """You are a professional medical expert. Read the article's limitation statements and answer:
1) Do the article's conclusions have ethnic or biological limitations?
2) Are the experimental results specifically targeted toward a particular regional population?
3) Are the conditions for these limitations clearly stated?
Article: {title}
Limitation statements: {text}
JSON only: {{"biological_limitation": true|false, "regional_population": true|false, "limitations_stated": true|false}}"""
EXP_SCHEMA = {
    "type": "object",
    "properties": {
        k: {"type": "boolean"} for k in ("biological_limitation", "regional_population", "limitations_stated")
    },
    "required": ["biological_limitation", "regional_population", "limitations_stated"],
}
STANCE_PROMPT = """Question: {question}
Article evidence: {evidence}
What does this article report for the question's intervention against its comparator on its outcome?
JSON only: {{"stance": one of {options}}}"""
EXTRAPOLATION_PROMPT = """Patient question: {question}
Article: {title}. Its population: {population}; intervention: {intervention}; outcomes: {outcome}.
Score 0-1 how well the article's population, intervention and outcomes match the question's.
JSON only: {{"population": 0.0, "intervention": 0.0, "outcome": 0.0}}"""


def _article_pool(ranked: list[Candidate]) -> dict[str, list[Candidate]]:
    """The POOL_ARTICLES best articles by their best window's hybrid RRF score, with their windows."""
    windows: dict[str, list[Candidate]] = defaultdict(list)
    for c in ranked:
        windows[c.row["doc_id"]].append(c)
    order = sorted(windows, key=lambda d: -max(c.fused for c in windows[d]))[:POOL_ARTICLES]
    return {d: windows[d] for d in order}


def _stance(r: Retriever, question: str, view: QueryView, windows: list[Candidate]) -> tuple[str, str]:
    """The article's direction for the question: verdict of its best sentences read with the
    question's arms (offline) or the LLM's."""
    qvec = view.vector
    sentences = [
        (flatten(s), float(np.asarray(vec, dtype=np.float32) @ qvec))
        for c in windows
        for s, vec in zip(c.row.get("sentences", []), c.row.get("sentence_vectors", []))
    ]
    best = [s for s, _ in sorted(sentences, key=lambda x: -x[1])[:STANCE_SENTENCES]]
    offline = read_verdict(best, r.verdict_model, view.anchors)[0]  # insufficient evidence when there is no sentence
    options = [*CLAIMS, INSUFFICIENT]
    result = r.client.complete_json(
        "meta_rag_stance",
        fill(STANCE_PROMPT, {"evidence": " ".join(best)}, question=question, options=options),
        {"type": "object", "properties": {"stance": {"enum": options}}, "required": ["stance"]},
        offline=lambda: {"stance": offline},
    )
    return result.data["stance"], result.mode


def _extrapolation(
    r: Retriever, question: str, anchors, doc_ids: list[str], titles: dict[str, str], qvec: np.ndarray
) -> dict[str, dict[str, float]]:
    """Per article: T_p, T_i, T_o as best cosine of the question's anchors with the article's graph entities."""
    fields = {
        "population": ("Population",),
        "intervention": ("Intervention", "Arm", "Comparator"),
        "outcome": ("Outcome",),
    }
    stated = {f: getattr(anchors, f) for f in fields if getattr(anchors, f)}
    if not stated or r.graph is None:
        vectors = r._embed([titles[d] for d in doc_ids])
        return {d: {"title": float(v @ qvec)} for d, v in zip(doc_ids, vectors)}
    entities = document_entities(r.graph, doc_ids, tuple(t for f in stated for t in fields[f]))
    anchor_vectors = dict(zip(stated, r._embed_short(list(stated.values()))))
    out: dict[str, dict[str, float]] = {}
    for d in doc_ids:
        mine = {
            f: entities.filter((entities["doc_id"] == d) & entities["type"].is_in(list(fields[f])))
            if entities.height
            else entities
            for f in fields
        }
        # clipped to [0, 1]: float32 cosines of near-identical names can exceed 1 by rounding
        cosines = {
            f: float(
                np.clip(
                    (entity_vectors(r.graph, mine[f]["id"].to_list()) @ anchor_vectors[f]).max(initial=0.0), 0.0, 1.0
                )
            )
            if mine[f].height
            else 0.0
            for f in stated
        }
        result = r.client.complete_json(
            "meta_rag_extrapolation",
            fill(
                EXTRAPOLATION_PROMPT,
                {
                    "title": titles[d],
                    **{f: ", ".join(mine[f]["name"].to_list()[:8]) if mine[f].height else "" for f in fields},
                },
                question=question,
            ),
            {
                "type": "object",
                "properties": {f: {"type": "number", "minimum": 0, "maximum": 1} for f in stated},
                "required": list(stated),
            },
            offline=lambda: cosines,  # noqa: B023 (called within this iteration)
        )
        out[d] = {f: float(result.data[f]) for f in stated}
    return out


@dataclass
class ArticleEvidence:
    """What META-RAG reads about a question's pool, before any of its constants apply."""

    question: str
    view: QueryView
    scorer: str
    laps: Laps
    pool: dict[str, list[Candidate]]
    titles: dict[str, str]
    parts: dict[str, dict]  # doc_id -> Date, Pub, Exp and their inputs
    stances: list[str]
    t_parts: dict[str, dict[str, float]]
    modes: set[str]


def gather_evidence(r: Retriever, question: str, conditions: list[str] | None) -> ArticleEvidence:
    """Steps 1-4 up to the constants: the pool, each article's Date, Pub, Exp, stance and T parts."""
    laps = Laps()
    ranked, view, scorer = scored_candidates(r, question, conditions, laps)
    pool = _article_pool(ranked)
    doc_ids = list(pool)
    docs = {d: r.documents.get(d, {}) for d in doc_ids}
    titles = {d: docs[d].get("title") or pool[d][0].row["title"] for d in doc_ids}
    years = {d: docs[d].get("year") or pool[d][0].row.get("year") for d in doc_ids}
    newest = max((y for y in years.values() if y), default=None)
    stances, parts, modes = [], {}, set()
    for d in doc_ids:
        design = r.document_types.get(d, ("expert opinion", ""))[0]
        text = docs[d].get("text") or " ".join(c.row["text"] for c in pool[d])
        limitations = limitation_sentences(text)
        answers = r.client.complete_json(
            "meta_rag_experiment",
            fill(EXP_PROMPT, {"title": titles[d], "text": " ".join(limitations)[:3000]}),
            EXP_SCHEMA,
            offline=lambda: experiment_answers_offline(text, limitations),  # noqa: B023 (called within this iteration)
        )
        modes.add(answers.mode)
        stance, mode = _stance(r, question, view, pool[d])
        modes.add(mode)
        stances.append(stance)
        parts[d] = {
            "date": date_score(years[d], newest),
            "pub": float(publication_tier(design)),
            "publication_type": design,
            "exp": experiment_score(answers.data),
            "exp_answers": answers.data,
        }
    laps.lap("reliability and stance")
    t_parts = _extrapolation(r, question, view.anchors, doc_ids, titles, view.vector)
    laps.lap("extrapolation")
    return ArticleEvidence(question, view, scorer, laps, pool, titles, parts, stances, t_parts, modes)


def rank_articles(evidence: ArticleEvidence, constants: MetaRagConstants, budget: int, model: str) -> Retrieval:
    """Step 2's r, step 3's filter and step 5's ranking under `constants`; `model` names the LLM
    the judgements came from when any did."""
    e, k = evidence, constants
    doc_ids = list(e.pool)
    rel = [reliability(e.parts[d]["date"], e.parts[d]["pub"], e.parts[d]["exp"], (k.a, k.b, k.c)) for d in doc_ids]
    keep, trace = heterogeneity_filter(e.stances, rel, k.v, k.m, k.r_c)
    articles, considered = [], []
    for i, d in enumerate(doc_ids):
        t = extrapolation(e.t_parts[d])
        s = ranking_score(rel[i], t)
        record = {
            "doc_id": d,
            "title": e.titles[d],
            "r": round(rel[i], 3),
            **e.parts[d],
            **trace[i],
            "T_parts": {name: round(v, 3) for name, v in e.t_parts[d].items()},
            "T": round(t, 4),
            "S": round(s, 4),
            "kept": keep[i],
        }
        articles.append(record)
        for c in e.pool[d]:
            c.final = s if keep[i] else 0.0
            c.scores.update(
                r=record["r"], stance=e.stances[i], delta=trace[i]["delta"], T=record["T"], S=record["S"], kept=keep[i]
            )
            considered.append(c)
    chosen = sorted((c for c in considered if c.scores["kept"]), key=lambda c: (-c.final, -(c.s or 0.0), c.window_id))
    e.laps.lap("heterogeneity and rank")
    return Retrieval(
        e.question,
        "meta_rag",
        e.view.vector,
        e.view.anchors,
        chosen[:budget],
        considered,
        e.laps.timings,
        {
            "fine_scorer": f"S = r^2 * T per article, then {e.scorer} within the article",
            "betr": "not applied (META-RAG grades by reliability r)",
            "judgements": "offline rules and verdict" if e.modes <= {"offline"} else f"llm:{model}",
            "articles": f"{sum(keep)} of {len(doc_ids)} kept by the heterogeneity filter",
        },
        details={
            "articles": sorted(articles, key=lambda a: -a["S"]),
            "settings": {"a_b_c": (k.a, k.b, k.c), "v": k.v, "M": k.m, "R_c": k.r_c, "pool_articles": POOL_ARTICLES},
        },
    )


def meta_rag(
    r: Retriever, question: str, conditions: list[str] | None, constants: MetaRagConstants | None = None
) -> Retrieval:
    """META-RAG over the lake, with the constants from Settings unless given."""
    return rank_articles(
        gather_evidence(r, question, conditions),
        constants or MetaRagConstants.from_settings(),
        r.params.budget,
        r.client.model,
    )
