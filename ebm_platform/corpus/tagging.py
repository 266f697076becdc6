"""Condition tagging with the catalogue's terms."""

from __future__ import annotations

from ebm_platform.conditions import Catalogue


def tag_conditions(catalogue: Catalogue, title: str, abstract: str, body: str, grade: str) -> list[str]:
    """Codes whose terms match the title or abstract, or the body at least `body_min_hits` times."""
    head = f"{title}\n{abstract}"
    codes: list[str] = []
    for condition in catalogue.conditions:
        if condition.requires_grade and grade not in condition.requires_grade:
            continue
        if condition.catch_all:
            codes.append(condition.code)
            continue
        if any(p.search(head) for p in condition.patterns):
            codes.append(condition.code)
            continue
        hits = sum(len(p.findall(body)) for p in condition.patterns)
        if hits >= catalogue.body_min_hits:
            codes.append(condition.code)
    return codes
