"""Evidence grade A-E: explicit metadata first, then rules over article type, title, abstract."""

from __future__ import annotations

import re

from ebm_platform.corpus.model import GRADES, DocumentError

# (grade, study design, pattern) in priority order: the first match wins.
_RULES: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("A", "guideline", re.compile(
        r"\b(?:clinical practice guidelines?|guidelines?\b|consensus statement|position statement|"
        r"expert consensus|recommendations? of the|practice parameter)", re.I)),
    ("B", "systematic review", re.compile(
        r"\b(?:systematic(?:al)? review|meta-?analy[sz]is|meta-?analyses|umbrella review|"
        r"pooled analysis of randomi[sz]ed)", re.I)),
    ("C", "randomised controlled trial", re.compile(
        r"\b(?:randomi[sz]ed|randomly (?:assigned|allocated)|random allocation|"
        r"controlled clinical trial|\bRCT\b)", re.I)),
    ("D", "cohort study", re.compile(
        r"\b(?:cohort|prospective(?:ly)? (?:study|follow)|longitudinal study|case-control|"
        r"observational study)", re.I)),
)
_ARTICLE_TYPES = {
    "practice-guideline": ("A", "guideline"),
    "guideline": ("A", "guideline"),
    "systematic-review": ("B", "systematic review"),
    "meta-analysis": ("B", "systematic review"),
}


def normalise_grade(value: object) -> str:
    """Validate an explicit grade ('A'..'E', case-insensitive) or raise DocumentError."""
    grade = str(value).strip().upper()
    if grade not in GRADES:
        raise DocumentError(f"unknown evidence_grade {value!r} (expected one of A, B, C, D, E)")
    return grade


def grade_document(
    explicit: object | None, article_type: str, title: str, abstract: str
) -> tuple[str, str, str]:
    """Return (grade, study design, basis) where basis names the metadata field or rule used."""
    if explicit not in (None, ""):
        grade = normalise_grade(explicit)
        design = {g: d for g, d, _ in _RULES}.get(grade, "other")
        return grade, design, "metadata:evidence_grade"
    if article_type in _ARTICLE_TYPES:
        grade, design = _ARTICLE_TYPES[article_type]
        return grade, design, f"article-type:{article_type}"
    for grade, design, pattern in _RULES:
        if pattern.search(title):
            return grade, design, f"rule:title:{design}"
    for grade, design, pattern in _RULES:
        if pattern.search(abstract):
            return grade, design, f"rule:abstract:{design}"
    return "E", "other", "rule:other"
