"""Entity names from tagged spans: head noun phrases, abbreviations expanded."""

from __future__ import annotations

import re

from ebm_platform.graph.pico_rules import clean_name

_DEFINITION = re.compile(r"((?:[\w-]+\s+){0,7}[\w-]+)\s*\(\s*([A-Z][A-Za-z0-9-]{1,9})\s*\)")
_DOSE_TAIL = re.compile(r"\s+\d+(?:[.,]\d+)?\s*(?:mg|g|kg|ml|mL|µg|mcg|IU|units?|%)\b.*$", re.I)
_LEADING_COUNT = re.compile(r"^(?:\d[\d,]*|[Aa] total of \d[\d,]*)\s+(?=[A-Za-z])")


def abbreviations(text: str) -> dict[str, str]:
    """Abbreviations a text defines as 'long form (ABBR)': the shortest tail of the preceding words
    that starts with the abbreviation's first letter and has at least as many words as it has
    capitals minus two (Schwartz-Hearst, simplified)."""
    found: dict[str, str] = {}
    for m in _DEFINITION.finditer(text):
        words, abbr = m.group(1).split(), m.group(2)
        capitals = sum(c.isupper() for c in abbr)
        for size in range(max(1, capitals - 2), len(words) + 1):
            tail = words[-size:]
            if tail[0][0].lower() == abbr[0].lower():
                found.setdefault(abbr, " ".join(tail))
                break
    return found


def entity_name(text: str, type_: str, known: dict[str, str] | None = None) -> str:
    """The name a tagged span gets in the graph: trimmed like the rules' names, a lone defined
    abbreviation replaced by its long form, doses dropped from interventions and counts from
    populations (so '90 mg etoricoxib' arms and '120 patients with X' cohorts merge); a span
    without a letter (a count or a dose the tagger marked alone) names nothing."""
    name = clean_name(text)
    if not re.search(r"[^\W\d_]", name):
        return ""
    if known and name in known:
        name = clean_name(known[name])
    if type_ in ("Intervention", "Comparator"):
        name = _DOSE_TAIL.sub("", name).strip()
    if type_ == "Population":
        name = _LEADING_COUNT.sub("", name)
    return name
