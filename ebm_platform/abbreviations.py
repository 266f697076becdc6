"""Abbreviations a text defines ("extracorporeal shock wave therapy (ESWT)") and a text with them spelled out:
shared by the graph's entity names (`pico.names`) and the bottom line's reading of a study's statements."""

from __future__ import annotations

import re

_DEFINITION = re.compile(r"((?:[\w-]+\s+){0,7}[\w-]+)\s*\(\s*([A-Z][A-Za-z0-9-]{1,9})\s*\)")


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


def spell_out(text: str, defined: dict[str, str]) -> str:
    """The text with each whole-word abbreviation of `defined` (`abbreviations`) replaced by its long form."""
    if not defined:
        return text
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(defined, key=len, reverse=True))) + r")\b")
    return pattern.sub(lambda m: defined[m.group(1)], text)
