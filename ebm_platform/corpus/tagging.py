"""Condition tagging with the catalogue's terms."""

from __future__ import annotations

from ebm_platform.conditions import Catalogue, Condition
from ebm_platform.corpus.model import CONCLUSIONS, abstract_section, section_text

REVIEW = "B"  # the grade of systematic reviews (corpus/grading.py), which often span conditions
HEAD_CHARS = 4000  # a document without an abstract section is judged by its first characters


def _topical(condition: Condition) -> bool:
    """A clinical condition (not the catch-all, not a guideline set that admits only grade A)."""
    return not condition.catch_all and not condition.requires_grade


def abstract_of(markdown: str) -> str:
    """The document's abstract section (a journal article's `## Abstract`), else its first
    HEAD_CHARS characters: an article's introduction names the conditions it is not about."""
    return abstract_section(markdown) or markdown[:HEAD_CHARS]


def tag_conditions(catalogue: Catalogue, title: str, abstract: str, body: str, grade: str) -> list[str]:
    """Codes whose terms match the title or abstract, or the body at least `body_min_hits` times.
    A guideline or a study whose title names conditions is about those alone: its abstract and body
    mention others in passing (the VA/DoD low back pain guideline named neck pain often enough to
    land in NP; a shoulder trial's background named Achilles tendinopathy, where shock waves were
    tried first). A systematic review is not held to its title: one review may cover neck and low
    back pain, and a Cochrane review without a title carries its first sentence in its place. It is
    about what its title and its conclusions name, and what its text names `body_min_hits` times: its
    results name other conditions in passing (the knee osteoarthritis exercise review's adverse events
    were "increased knee or low back pain"; a ketamine review listed the operations of its trials). A
    review whose conclusions are not a section of their own (one dataset gives results and conclusions
    as one text) is read whole."""
    conclusions = section_text(body, CONCLUSIONS) if grade == REVIEW else ""
    head = f"{title}\n{conclusions or abstract}"
    scope = {c.code for c in catalogue.conditions if _topical(c) and c.matches(title)} if grade != REVIEW else set()
    codes: list[str] = []
    for condition in catalogue.conditions:
        if condition.requires_grade and grade not in condition.requires_grade:
            continue
        if scope and _topical(condition) and condition.code not in scope:
            continue
        if condition.catch_all:
            codes.append(condition.code)
            continue
        if condition.matches(head):
            codes.append(condition.code)
            continue
        hits = sum(len(p.findall(body)) for p in condition.patterns)
        if hits >= catalogue.body_min_hits:
            codes.append(condition.code)
    return codes
