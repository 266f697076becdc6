"""Document types for the seed strategies: Med-R2's 9-level hierarchy of evidence and META-RAG's
publication-type tiers, read from a document's JATS article-type, title and abstract at query time
(from the lake's `source_documents`), strongest evidence first. The corpus grade (corpus/grading.py)
is not changed by this: storing the type with each document is left to a lake rebuild."""

from __future__ import annotations

import re

# Med-R2's 9-level hierarchy of evidence (rank e: 1 = most credible; f_h = 10 - e) and META-RAG's
# publication-type tiers (7 = systematic review / meta-analysis ... 1 = other), per document type.
EVIDENCE_LEVELS: tuple[tuple[str, int, int], ...] = (  # (document type, Med-R2 rank e, META-RAG tier)
    ("meta-analysis", 1, 7), ("systematic review", 2, 7), ("guideline", 3, 2), ("randomised controlled trial", 4, 6),
    ("non-randomised trial", 5, 5), ("cohort study", 6, 5), ("case series", 7, 3), ("case report", 8, 3),
    ("expert opinion", 9, 2),
)
_TYPE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (  # strongest design words first
    ("meta-analysis", re.compile(r"\bmeta-?analy[sz]?[ei]s\b|\bmeta-?analyses\b", re.I)),
    ("systematic review", re.compile(r"\bsystematic(?:al)? review|\bumbrella review|\bscoping review", re.I)),
    ("guideline", re.compile(r"\b(?:clinical practice |evidence-based )?guidelines?\b(?! (?:for reporting|recommend))|"
                             r"\bconsensus statement|\bposition statement|\bpractice parameter", re.I)),
    ("randomised controlled trial", re.compile(
        r"\brandomi[sz]ed|\brandomly (?:assigned|allocated)|\brandom allocation|\bRCT\b|"
        r"\bdouble[- ]blind|\bplacebo[- ]controlled|\bcontrolled (?:clinical )?trial|\bcross-?over trial", re.I)),
    ("non-randomised trial", re.compile(r"\bnon-?randomi[sz]ed|\bquasi-?experiment|\bclinical trial|\bpilot trial|"
                                        r"\bopen-label|\bsingle-arm", re.I)),
    ("cohort study", re.compile(r"\bcohort|\bprospective(?:ly)? (?:study|follow)|\blongitudinal study|"
                                r"\bcase-control|\bobservational study|\bcross-sectional|\bregistry", re.I)),
    ("case series", re.compile(r"\bcase series|\bretrospective (?:review|analysis)|\bchart review", re.I)),
    ("case report", re.compile(r"\bcase report|\bcase presentation|\ba case of\b", re.I)),
)
_ARTICLE_TYPE_DESIGNS = {"meta-analysis": "meta-analysis", "systematic-review": "systematic review",
                         "practice-guideline": "guideline", "guideline": "guideline", "case-report": "case report",
                         "editorial": "expert opinion", "letter": "expert opinion", "commentary": "expert opinion",
                         "review-article": "expert opinion"}
ABSTRACT_CHARS = 3000
_RANDOM_ALLOCATION = re.compile(r"\brandomly (?:assigned|allocated|divided|distributed)|\brandomi[sz](?:ed|ation)\b", re.I)
_TRIAL = re.compile(r"\b(?:intervention|control|placebo|treatment) (?:group|arm)s?\b|\bplacebo\b", re.I)
_DESIGN_OF_GRADE = {"guideline": "guideline", "systematic review": "systematic review",
                    "randomised controlled trial": "randomised controlled trial", "cohort study": "cohort study"}


def document_type(article_type: str, title: str, text: str, study_design: str = "other") -> tuple[str, str]:
    """(document type on the 9-level hierarchy, basis), strongest evidence first: a specific JATS
    article-type, design words in the title, a narrative review's article-type, design words in the
    abstract (a guideline only from the title or metadata: the word in an abstract is not a design),
    the corpus grader's design, then random-allocation language anywhere in the text. The abstract
    is the text's first ABSTRACT_CHARS characters."""
    abstract = (text or "")[:ABSTRACT_CHARS]
    if article_type in _ARTICLE_TYPE_DESIGNS and article_type != "review-article":
        return _ARTICLE_TYPE_DESIGNS[article_type], f"article-type:{article_type}"
    for design, pattern in _TYPE_RULES:
        if pattern.search(title or ""):
            return design, f"title:{design}"
    if article_type == "review-article":
        return "expert opinion", "article-type:review-article (narrative review)"
    for design, pattern in _TYPE_RULES:
        if design != "guideline" and pattern.search(abstract):
            return design, f"abstract:{design}"
    if study_design in _DESIGN_OF_GRADE and study_design != "guideline":
        return _DESIGN_OF_GRADE[study_design], f"grader:{study_design}"
    if _RANDOM_ALLOCATION.search(text or ""):
        return "randomised controlled trial", "full text: random allocation"
    if _TRIAL.search(text or ""):
        return "non-randomised trial", "full text: trial arms without random allocation"
    return "expert opinion", "no design stated (lowest level)"


def evidence_rank(design: str) -> int:
    """Med-R2's evidence rank e of a document type (1 meta-analysis ... 9 expert opinion)."""
    return {d: e for d, e, _ in EVIDENCE_LEVELS}[design]


def publication_tier(design: str) -> int:
    """META-RAG's publication-type score (7 systematic review / meta-analysis ... 1 other)."""
    return {d: t for d, _, t in EVIDENCE_LEVELS}[design]
