"""What each fused candidate already carries, as one feature row for the fine scorer.

Per candidate: its rank in each channel and fused RRF score; bi-encoder and HyDE cosines; the
full-text channel's BM25 (raw and relative to the best candidate); ColBERT MaxSim over the stored
token vectors (per question token); the cosine of its best quotable sentence; IDF-weighted
coverage of the question, of its I / C / O anchors and of the question in the title; its section
(abstract, results, discussion, methods, introduction, back matter); how much it reads like a
result (numbers, p-values, comparison words); and its document's standing in the candidate set
(best cosine and BM25 of the document's candidates, how many it has, the candidate's margin to its
document's best). Grade is left out on purpose: BETR adds the grade calibration on top.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ebm_platform.retrieval.lexical import TermStatistics
from ebm_platform.vocabulary import Anchors

CHANNELS = ("dense", "full_text", "hyde", "graph")
ABSENT_RANK = 1000
SECTIONS = {
    "abstract": re.compile(r"\babstract\b|\bsummary\b", re.I),
    "results": re.compile(r"\bresults?\b|\bfindings\b|\boutcomes?\b", re.I),
    "discussion": re.compile(r"\bdiscussion\b|\bconclusions?\b|\binterpretation\b", re.I),
    "methods": re.compile(
        r"\bmethods?\b|\bdesign\b|\bparticipants\b|\bprocedures?\b|\bpatients and\b|\bmaterials?\b|"
        r"\bintervention\b|\bstatistic",
        re.I,
    ),
    "introduction": re.compile(r"\bintroduction\b|\bbackground\b", re.I),
    "back_matter": re.compile(
        r"competing|contribution|acknowledg|abbreviation|pre-publication|funding|"
        r"references|supplementary|conflict",
        re.I,
    ),
}
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?%?")
_P_VALUE = re.compile(r"\bp\s*[<=>≤]\s*0?\.\d", re.I)
_COMPARISON = re.compile(
    r"\b(?:significant(?:ly)?|differ(?:ence|ed|ent)?|increas\w*|decreas\w*|reduc\w*|"
    r"improv\w*|higher|lower|greater|compared|versus|vs)\b",
    re.I,
)
FEATURES = (
    "rrf",
    *(f"log_rank_{c}" for c in CHANNELS),
    "cosine",
    "hyde_cosine",
    "bm25",
    "bm25_rel",
    "maxsim",
    "best_sentence_cosine",
    "coverage",
    "coverage_title",
    "coverage_i",
    "coverage_c",
    "coverage_o",
    *(f"section_{s}" for s in SECTIONS),
    "numbers",
    "p_values",
    "comparison_words",
    "length",
    "doc_max_cosine",
    "doc_max_bm25_rel",
    "doc_candidates",
    "doc_cosine_margin",
    "doc_coverage_margin",
)


def maxsim(query_tokens: np.ndarray, docs: list[np.ndarray]) -> np.ndarray:
    """ColBERT MaxSim of each document: the sum over query tokens of the best cosine with any of its
    tokens (rows L2-normalised); 0 for an empty side. One matrix product for all documents (one per
    document cost 27% of the pipeline), in torch."""
    sizes = np.array([len(d) for d in docs], dtype=np.int64)
    out = np.zeros(len(docs), dtype=np.float32)
    if not len(query_tokens) or not sizes.sum():
        return out
    import torch  # float16 -> float32 vectorised (numpy's conversion took 37 ms of a question's 86)

    stacked = torch.from_numpy(np.concatenate([d for d in docs if len(d)])).float()
    similarity = (stacked @ torch.from_numpy(np.asarray(query_tokens, dtype=np.float32)).T).numpy()
    starts = np.cumsum(sizes)[sizes > 0] - sizes[sizes > 0]  # (all document tokens, query tokens) rows per document
    out[sizes > 0] = np.maximum.reduceat(similarity, starts, axis=0).sum(axis=1)
    return out


@dataclass
class QueryView:
    """What the features need from the query side."""

    question: str
    anchors: Anchors
    vector: np.ndarray
    hyde_vector: np.ndarray
    tokens: np.ndarray


def section_flags(section: str | None) -> dict[str, float]:
    """One flag per SECTIONS name: whether the heading path below the article title names it."""
    path = (section or "").split(" > ", 1)[-1]  # the first element is the article title
    return {f"section_{name}": float(bool(pattern.search(path))) for name, pattern in SECTIONS.items()}


def candidate_features(
    query: QueryView,
    rows: list[dict],
    channel_ranks: list[dict[str, int]],
    fused: list[float],
    bm25: list[float | None],
    stats: TermStatistics,
    late_interaction: bool = True,
) -> np.ndarray:
    """One row of FEATURES per candidate (rows carry `vector`, `tokens`, `sentence_vectors`, text, title, section,
    doc_id). Without `late_interaction` (the no-ColBERT ablation) MaxSim is not computed and reads as missing."""
    q_tokens = query.tokens.astype(np.float32)
    late = maxsim(q_tokens, [row["tokens"] for row in rows]) / max(len(q_tokens), 1) if late_interaction else None
    best_bm25 = max([b for b in bm25 if b is not None], default=0.0) or 1.0
    anchors = query.anchors
    out = []
    for i, (row, ranks, rrf, score) in enumerate(zip(rows, channel_ranks, fused, bm25)):
        vector = np.asarray(row["vector"], dtype=np.float32)
        sentences = row.get("sentence_vectors")
        text = row["text"]
        words = max(len(text.split()), 1)
        feature = {
            "rrf": rrf,
            **{f"log_rank_{c}": math.log1p(ranks.get(c, ABSENT_RANK)) for c in CHANNELS},
            "cosine": float(vector @ query.vector),
            "hyde_cosine": float(vector @ query.hyde_vector),
            "bm25": score or 0.0,
            "bm25_rel": (score or 0.0) / best_bm25,
            "maxsim": float(late[i]) if late is not None else math.nan,
            "best_sentence_cosine": float((np.asarray(sentences, dtype=np.float32) @ query.vector).max())
            if sentences is not None and len(sentences)
            else 0.0,
            "coverage": stats.coverage(query.question, text),
            "coverage_title": stats.coverage(query.question, row.get("title") or ""),
            "coverage_i": stats.coverage(anchors.intervention, text) if anchors.intervention else 0.0,
            "coverage_c": stats.coverage(anchors.comparator, text) if anchors.comparator else 0.0,
            "coverage_o": stats.coverage(anchors.outcome, text) if anchors.outcome else 0.0,
            **section_flags(row.get("section")),
            "numbers": len(_NUMBER.findall(text)) / words,
            "p_values": float(len(_P_VALUE.findall(text))),
            "comparison_words": len(_COMPARISON.findall(text)) / words,
            "length": float(words),
        }
        out.append(feature)
    by_doc: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_doc[row["doc_id"]].append(i)
    for members in by_doc.values():
        best_cos = max(out[i]["cosine"] for i in members)
        best_cov = max(out[i]["coverage"] for i in members)
        best_bm = max(out[i]["bm25_rel"] for i in members)
        for i in members:
            out[i].update(
                doc_max_cosine=best_cos,
                doc_max_bm25_rel=best_bm,
                doc_candidates=float(len(members)),
                doc_cosine_margin=out[i]["cosine"] - best_cos,
                doc_coverage_margin=out[i]["coverage"] - best_cov,
            )
    return np.array([[f[name] for name in FEATURES] for f in out], dtype=np.float32).reshape(len(out), len(FEATURES))
