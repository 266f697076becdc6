"""Gold windows: which of a lake's windows hold an annotated evidence span (text compared after
folding case and punctuation; a long span by its opening and closing words)."""

from __future__ import annotations

import re

SPAN_CHARS = 120


def fold(text: str) -> str:
    """Lower case, every run of other characters one space."""
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def gold_for_spans(windows: list[tuple[str, str]], spans: list[str]) -> set[str]:
    """Ids of windows (id, folded text) that contain any of the evidence spans."""
    gold: set[str] = set()
    for span in spans:
        folded = fold(span)
        if len(folded) < 12:
            continue
        probes = (
            [folded]
            if len(folded) <= SPAN_CHARS
            else [folded[:SPAN_CHARS].rsplit(" ", 1)[0], folded[-SPAN_CHARS:].split(" ", 1)[-1]]
        )
        for window_id, text in windows:
            if any(p in text for p in probes):
                gold.add(window_id)
    return gold
