"""Document type and evidence grade, strongest evidence first.

The document type sits on Med-R2's 9-level hierarchy of evidence (meta-analysis ... expert
opinion) and is read in this order: a specific JATS article-type, design words in the title, a
narrative review's article-type, design words in the abstract (a guideline only from the title or
metadata: the word "guidelines" in an abstract is not a design), then random-allocation or
trial-arm language anywhere in the text. The grade A-E follows from the type (A guideline, B
systematic review / meta-analysis, C randomised trial, D non-randomised or observational study, E
other), unless the document states its grade in metadata. The seed strategies read the same type:
Med-R2's rank e and META-RAG's publication-type tier."""

from __future__ import annotations

import re
from typing import NamedTuple

from ebm_platform.corpus.model import GRADES, DocumentError

# (document type, Med-R2 rank e: 1 = most credible, f_h = 10 - e; META-RAG publication-type tier,
# 7 = systematic review / meta-analysis ... 1 = other; corpus grade)
EVIDENCE_LEVELS: tuple[tuple[str, int, int, str], ...] = (
    ("meta-analysis", 1, 7, "B"), ("systematic review", 2, 7, "B"), ("guideline", 3, 2, "A"),
    ("randomised controlled trial", 4, 6, "C"), ("non-randomised trial", 5, 5, "D"), ("cohort study", 6, 5, "D"),
    ("case series", 7, 3, "E"), ("case report", 8, 3, "E"), ("expert opinion", 9, 2, "E"),
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
                         "editorial": "expert opinion", "letter": "expert opinion", "commentary": "expert opinion"}
ABSTRACT_CHARS = 3000
_RANDOM_ALLOCATION = re.compile(r"\brandomly (?:assigned|allocated|divided|distributed)|\brandomi[sz](?:ed|ation)\b", re.I)
_TRIAL = re.compile(r"\b(?:intervention|control|placebo|treatment) (?:group|arm)s?\b|\bplacebo\b", re.I)
_DESIGN_OF_GRADE = {"A": "guideline", "B": "systematic review", "C": "randomised controlled trial", "D": "cohort study"}


class Grading(NamedTuple):
    """A document's grade, its type on the 9-level hierarchy (stored as `study_design`) and the
    evidence each was decided by."""

    grade: str
    study_design: str
    basis: str


def normalise_grade(value: object) -> str:
    """Validate an explicit grade ('A'..'E', case-insensitive) or raise DocumentError."""
    grade = str(value).strip().upper()
    if grade not in GRADES:
        raise DocumentError(f"unknown evidence_grade {value!r} (expected one of A, B, C, D, E)")
    return grade


def document_type(article_type: str, title: str, text: str) -> tuple[str, str]:
    """(document type on the 9-level hierarchy, basis), strongest evidence first (module docstring);
    the abstract is the text's first ABSTRACT_CHARS characters."""
    abstract = (text or "")[:ABSTRACT_CHARS]
    if article_type in _ARTICLE_TYPE_DESIGNS:
        return _ARTICLE_TYPE_DESIGNS[article_type], f"article-type:{article_type}"
    for design, pattern in _TYPE_RULES:
        if pattern.search(title or ""):
            return design, f"title:{design}"
    if article_type == "review-article":
        return "expert opinion", "article-type:review-article (narrative review)"
    for design, pattern in _TYPE_RULES:
        if design != "guideline" and pattern.search(abstract):
            return design, f"abstract:{design}"
    if _RANDOM_ALLOCATION.search(text or ""):
        return "randomised controlled trial", "full text:random allocation"
    if _TRIAL.search(text or ""):
        return "non-randomised trial", "full text:trial arms without random allocation"
    return "expert opinion", "none:no design stated (lowest level)"


def grade_of_type(design: str) -> str:
    """The corpus grade A-E of a document type."""
    return {d: g for d, _, _, g in EVIDENCE_LEVELS}[design]


def grade_document(explicit: object | None, article_type: str, title: str, text: str) -> Grading:
    """Grade and type a document: an explicit grade in metadata wins for the grade (and names the
    type when the text states none); otherwise the grade follows the document type."""
    design, basis = document_type(article_type, title, text)
    if explicit in (None, ""):
        return Grading(grade_of_type(design), design, basis)
    grade = normalise_grade(explicit)
    if basis.startswith("none:") and grade in _DESIGN_OF_GRADE:
        design = _DESIGN_OF_GRADE[grade]
    return Grading(grade, design, f"metadata:evidence_grade; type {basis}")


def evidence_rank(design: str) -> int:
    """Med-R2's evidence rank e of a document type (1 meta-analysis ... 9 expert opinion)."""
    return {d: e for d, e, _, _ in EVIDENCE_LEVELS}[design]


def publication_tier(design: str) -> int:
    """META-RAG's publication-type score (7 systematic review / meta-analysis ... 1 other)."""
    return {d: t for d, _, t, _ in EVIDENCE_LEVELS}[design]
