"""Condition tagging with the catalogue's terms."""

from __future__ import annotations

from ebm_platform.conditions import Catalogue, Condition

GUIDELINE = "A"  # the grade of clinical practice guidelines (corpus/grading.py)


def _topical(condition: Condition) -> bool:
    """A clinical condition (not the catch-all, not a guideline set that admits only grade A)."""
    return not condition.catch_all and not condition.requires_grade


def tag_conditions(catalogue: Catalogue, title: str, abstract: str, body: str, grade: str) -> list[str]:
    """Codes whose terms match the title or abstract, or the body at least `body_min_hits` times.
    A guideline whose title names conditions is about those alone: its body (a hundred pages)
    mentions others in passing (the VA/DoD low back pain guideline named neck pain often enough
    to land in NP, where its discussion of spinal manipulation then answered neck pain questions)."""
    head = f"{title}\n{abstract}"
    scope = {c.code for c in catalogue.conditions if _topical(c) and c.matches(title)} if grade == GUIDELINE else set()
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
