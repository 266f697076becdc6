"""Document type and evidence grade, strongest evidence first.

The document type sits on Med-R2's 9-level hierarchy of evidence (meta-analysis ... expert
opinion) and is read in this order: a specific JATS article-type; design words in the title (a
guideline named beside a study design, or in a title that asks a question, "Do we meet the
guidelines?", is that study's topic, not its design); a narrative review's
article-type; design words in the abstract (there a meta-analysis or systematic review counts only
beside review methods such as a database search, and "guidelines" never counts); random allocation
or trial arms anywhere in the text; a laboratory or animal experiment; then what the abstract
reports: participants compared or related to outcomes (an observational study, typed as a cohort
study), participants only described (a case series), or none (expert opinion). The grade A-E
follows from the type (A guideline, B systematic review / meta-analysis, C randomised trial, D
non-randomised or observational study, E other), unless the document states its grade in
metadata. The seed strategies read the same type: Med-R2's rank e and META-RAG's publication-type
tier."""

from __future__ import annotations

import re
from typing import NamedTuple

from ebm_platform.corpus.model import GRADES, DocumentError

# (document type, Med-R2 rank e: 1 = most credible, f_h = 10 - e; META-RAG publication-type tier,
# 7 = systematic review / meta-analysis ... 1 = other; corpus grade)
EVIDENCE_LEVELS: tuple[tuple[str, int, int, str], ...] = (
    ("meta-analysis", 1, 7, "B"),
    ("systematic review", 2, 7, "B"),
    ("guideline", 3, 2, "A"),
    ("randomised controlled trial", 4, 6, "C"),
    ("non-randomised trial", 5, 5, "D"),
    ("cohort study", 6, 5, "D"),
    ("case series", 7, 3, "E"),
    ("case report", 8, 3, "E"),
    ("expert opinion", 9, 2, "E"),
)


class _Level(NamedTuple):
    rank: int
    tier: int
    grade: str


_LEVEL_OF = {design: _Level(rank, tier, grade) for design, rank, tier, grade in EVIDENCE_LEVELS}
_TYPE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (  # strongest design words first
    ("meta-analysis", re.compile(r"\bmeta-?analy[sz]?[ei]s\b|\bmeta-?analyses\b", re.I)),
    ("systematic review", re.compile(r"\bsystematic(?:al)? review|\bumbrella review|\bscoping review", re.I)),
    (
        "guideline",
        re.compile(
            r"\b(?:clinical practice |evidence-based )?guidelines?\b(?! (?:for reporting|recommend))|"
            r"\bconsensus statement|\bposition statement|\bpractice parameter",
            re.I,
        ),
    ),
    (
        "randomised controlled trial",
        re.compile(
            r"(?<!non-)\brandomi[sz]ed|\brandomly (?:assigned|allocated)|\brandom allocation|\bRCT\b|"
            r"\bdouble[- ]blind|\bplacebo[- ]controlled|\bcontrolled (?:clinical )?trial|\bcross-?over trial",
            re.I,
        ),
    ),
    (
        "non-randomised trial",
        re.compile(
            r"\bnon-?randomi[sz]ed|\bquasi-?experiment|\bclinical trial|\bpilot trial|"
            r"\bopen-label|\bsingle-arm",
            re.I,
        ),
    ),
    (
        "cohort study",
        re.compile(
            r"\bcohort|\bprospective(?:ly)? (?:study|follow)|\blongitudinal study|"
            r"\bcase-(?:control|referent)|\bobservational|\bcross-sectional|\bregistry|"
            r"\b(?:questionnaire )?survey\b",
            re.I,
        ),
    ),
    ("case series", re.compile(r"\bcase series", re.I)),
    (
        "case report",
        re.compile(
            r"\bcase report|\bcase presentation|\ba case of\b|\bwe (?:present|report|describe) "
            r"(?:a|an|the) (?:case|patient)|\b(?:a|an) \d+-year-old (?:man|woman|male|female|boy|"
            r"girl|patient)",
            re.I,
        ),
    ),
)
_ARTICLE_TYPE_DESIGNS = {
    "meta-analysis": "meta-analysis",
    "systematic-review": "systematic review",
    "practice-guideline": "guideline",
    "guideline": "guideline",
    "case-report": "case report",
    "editorial": "expert opinion",
    "letter": "expert opinion",
    "commentary": "expert opinion",
}
ABSTRACT_CHARS = 3000
_RANDOM_ALLOCATION = re.compile(
    r"\brandomly (?:assigned|allocated|divided|distributed)|\brandomi[sz](?:ed|ation)\b", re.I
)
_TRIAL = re.compile(r"\b(?:intervention|placebo) (?:group|arm)s?\b|\btreatment arms?\b|\bplacebo\b", re.I)
_SECONDARY = ("meta-analysis", "systematic review")
_REVIEW_METHODS = re.compile(
    r"\b(?:searched|databases?|MEDLINE|PubMed|Embase|Cochrane|CINAHL|literature search|"
    r"(?:included|eligible|identified) (?:studies|trials|articles|reports)|"
    r"pooled (?:analysis|estimates?|data)|random[- ]effects?)",
    re.I,
)
_EXPERIMENT = re.compile(
    r"\b(?:rats?|mice|murine|rabbits?|canine|dogs?|pigs?|porcine|sheep|cadavers?|cadaveric|"
    r"in vitro)\b",
    re.I,
)
_NUMBER = (
    r"(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|"
    r"sixty|seventy|eighty|ninety|hundred|thousand)"
)
_PEOPLE = (
    r"(?:patients|subjects|participants|children|women|men|individuals|cases|persons|people|adults|infants|"
    r"volunteers|students|physicians|doctors|families|specimens|samples|procedures)"
)
_PARTICIPANTS = re.compile(
    rf"\b{_NUMBER}(?:[- ][a-z]+){{0,3}} {_PEOPLE}\b|"  # "713 blunt trauma patients"
    rf"\b(?:group|series|sample|population) of (?:[a-z]+ ){{0,2}}{_PEOPLE}\b|"
    rf"\b{_PEOPLE} (?:who|with|undergoing|admitted|treated|referred|attending|were)\b",
    re.I,
)
_ANALYTIC = re.compile(
    r"\b(?:compar(?:e|ed|ing|ison)|versus|vs\b|controls?\b|groups?\b|associat(?:ed|ion)|"
    r"correlat(?:ed|ion)|relationship|risk factors?|predict|odds ratio|relative risk|hazard ratio|"
    r"sensitivity|specificity|prevalence|regression)",
    re.I,
)
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
    in_title = [design for design, pattern in _TYPE_RULES if pattern.search(title or "")]
    if "?" in (title or ""):  # a title that asks about guidelines is a study of them, not one
        in_title = [design for design in in_title if design != "guideline"]
    if in_title:
        design = in_title[1] if in_title[0] == "guideline" and len(in_title) > 1 else in_title[0]
        return design, f"title:{design}"
    if article_type == "review-article":
        return "expert opinion", "article-type:review-article (narrative review)"
    review = bool(_REVIEW_METHODS.search(abstract))
    for design, pattern in _TYPE_RULES:
        if design != "guideline" and (review or design not in _SECONDARY) and pattern.search(abstract):
            return design, f"abstract:{design}"
    if _RANDOM_ALLOCATION.search(text or ""):
        return "randomised controlled trial", "full text:random allocation"
    if _TRIAL.search(text or ""):
        return "non-randomised trial", "full text:trial arms without random allocation"
    if _EXPERIMENT.search(abstract):
        return "non-randomised trial", "inferred:laboratory or animal experiment"
    if _PARTICIPANTS.search(abstract):
        if _ANALYTIC.search(abstract):
            return "cohort study", "inferred:participants compared or related to outcomes (observational)"
        return "case series", "inferred:participants described without comparison"
    return "expert opinion", "none:no design stated (lowest level)"


def grade_of_type(design: str) -> str:
    """The corpus grade A-E of a document type."""
    return _LEVEL_OF[design].grade


def grade_document(explicit: object | None, article_type: str, title: str, text: str) -> Grading:
    """Grade and type a document: an explicit grade in metadata wins for the grade (and names the
    type when the text states no design, only inferred or none); otherwise the grade follows the
    document type."""
    design, basis = document_type(article_type, title, text)
    if explicit in (None, ""):
        return Grading(grade_of_type(design), design, basis)
    grade = normalise_grade(explicit)
    if basis.split(":")[0] in ("inferred", "none") and grade in _DESIGN_OF_GRADE:
        design = _DESIGN_OF_GRADE[grade]
    return Grading(grade, design, f"metadata:evidence_grade; type {basis}")


def evidence_rank(design: str) -> int:
    """Med-R2's evidence rank e of a document type (1 meta-analysis ... 9 expert opinion)."""
    return _LEVEL_OF[design].rank


def publication_tier(design: str) -> int:
    """META-RAG's publication-type score (7 systematic review / meta-analysis ... 1 other)."""
    return _LEVEL_OF[design].tier
