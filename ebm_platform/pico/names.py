"""Typed spans from a tagger's word labels, and the names they get in the graph: head noun phrases,
abbreviations expanded. Only applies a trained tagger (the tagger's training key leaves this module
out, so a change here retrains nothing)."""

from __future__ import annotations

import re

import numpy as np

from ebm_platform.graph.pico_rules import COMPARATOR_TERMS, clean_name
from ebm_platform.pico.spans import CLASSES, SENTENCE_END, Words, runs, trim

_BEFORE_COMPARATOR = re.compile(r"(?:versus|vs\.?|compared (?:with|to)|than|or)\s*(?:a |an |the |with )?$", re.I)

_DOSE_TAIL = re.compile(r"\s+\d+(?:[.,]\d+)?\s*(?:mg|g|kg|ml|mL|µg|mcg|IU|units?|%)\b.*$", re.I)
_LEADING_COUNT = re.compile(r"^(?:\d[\d,]*|[Aa] total of \d[\d,]*)\s+(?=[A-Za-z])")


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


def sentence_parts(words: Words, i: int, j: int) -> list[tuple[int, int]]:
    """A run of words [i, j) cut after each sentence end inside it that a capitalised word follows
    ("balance training or usual care. Balance training" is two spans; "vs. placebo" stays one)."""
    parts, begin = [], i
    for k in range(i, j - 1):
        if words.tokens[k] in SENTENCE_END and words.tokens[k + 1][:1].isupper():
            parts.append((begin, k + 1))
            begin = k + 1
    return parts + [(begin, j)]


def entities(words: Words, labels: np.ndarray, start_char: int = 0) -> list[dict]:
    """Typed spans of a text's word labels, with character offsets, none across a sentence end;
    only spans that start at or after `start_char` (a window's text after its title/section
    prefix), shifted by it. An I span is a Comparator when it reads as one or follows "versus",
    "compared with", "than" or "or"."""
    found = []
    for run_start, run_end, c in runs(labels):
        for i, j in sentence_parts(words, run_start, run_end):
            i, j = trim(words, i, j)
            if i >= j or words.starts[i] < start_char:
                continue
            start, end = int(words.starts[i]), int(words.ends[j - 1])
            text = words.text[start:end]
            letter = CLASSES[c]
            type_ = {"P": "Population", "O": "Outcome"}.get(letter, "Intervention")
            before = words.text[max(0, start - 30) : start]
            if letter == "I" and (COMPARATOR_TERMS.search(text) or _BEFORE_COMPARATOR.search(before)):
                type_ = "Comparator"
            found.append({"type": type_, "text": text, "start": start - start_char, "end": end - start_char})
    return found
