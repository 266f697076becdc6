"""Words, PICO labels per word and character spans: the EBM-NLP token convention.

Classes follow EBM-NLP: Population -> P; Intervention, Comparator and Arm -> I; Outcome -> O.
A text is cut into words (letters/digits with inner hyphens or apostrophes, or one punctuation
mark); a label marks a word, a span is a run of equally labelled words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

CLASSES = ("none", "P", "I", "O")
TYPE_CLASS = {"Population": "P", "Intervention": "I", "Comparator": "I", "Arm": "I", "Outcome": "O"}
SENTENCE_END = {".", "?", "!"}  # a word that ends a sentence (when a capital follows, in `entities`)
_WORD = re.compile(r"\w+(?:[-'’]\w+)*|[^\w\s]")
# words a span may contain but never start or end with
INNER = {
    "of",
    "and",
    "or",
    "in",
    "with",
    "for",
    "to",
    "on",
    "at",
    "the",
    "a",
    "an",
    "plus",
    "by",
    "from",
    "as",
    "-",
    "/",
    ",",
    "(",
    ")",
    "+",
    "%",
    ".",
}


@dataclass(frozen=True)
class Words:
    """A text's words and their character offsets."""

    text: str
    tokens: list[str]
    starts: np.ndarray
    ends: np.ndarray

    @classmethod
    def of(cls, text: str) -> Words:
        found = list(_WORD.finditer(text))
        return cls(
            text,
            [m.group(0) for m in found],
            np.array([m.start() for m in found], dtype=np.int64),
            np.array([m.end() for m in found], dtype=np.int64),
        )

    def __len__(self) -> int:
        return len(self.tokens)

    def index_of_chars(self, start: int, end: int) -> tuple[int, int]:
        """Word range [i, j) of the words overlapping the character span [start, end)."""
        i = int(np.searchsorted(self.ends, start, side="right"))
        j = int(np.searchsorted(self.starts, end, side="left"))
        return i, max(i, j)


def label_chars(words: Words, spans: list[tuple[int, int, str]]) -> np.ndarray:
    """Word labels (indices into CLASSES) from character spans (start, end, class letter);
    a later span overwrites an earlier one."""
    labels = np.zeros(len(words), dtype=np.int64)
    for start, end, letter in spans:
        i, j = words.index_of_chars(start, end)
        labels[i:j] = CLASSES.index(letter)
    return labels


def runs(labels: np.ndarray) -> list[tuple[int, int, int]]:
    """Maximal runs (i, j, class) of equal non-zero labels, trimmed of INNER words at their edges
    by the caller (see `trim`)."""
    out, i = [], 0
    while i < len(labels):
        if labels[i]:
            j = i
            while j < len(labels) and labels[j] == labels[i]:
                j += 1
            out.append((i, j, int(labels[i])))
            i = j
        else:
            i += 1
    return out


def trim(words: Words, i: int, j: int) -> tuple[int, int]:
    """Drop function words and punctuation at a run's edges (a closing bracket stays when its
    opening bracket is inside)."""
    while i < j and words.tokens[i].lower() in INNER:
        i += 1
    while j > i and words.tokens[j - 1].lower() in INNER:
        if words.tokens[j - 1] == ")" and "(" in words.tokens[i : j - 1]:
            break
        j -= 1
    return i, j


def name_spans(text: str, names: list[tuple[str, str]]) -> list[tuple[int, int, str]]:
    """Every case-insensitive whole-word occurrence of each (name, class letter) in `text`:
    how entities without offsets (the rules, an LLM) are put on tokens."""
    spans = []
    for name, letter in names:
        if not name.strip():
            continue
        for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.I):
            spans.append((m.start(), m.end(), letter))
    return spans


def token_scores(gold: list[np.ndarray], predicted: list[np.ndarray]) -> dict[str, dict[str, float]]:
    """Token-level precision, recall and F1 per class (P, I, O) over aligned label arrays."""
    g, p = (
        np.concatenate(gold) if gold else np.zeros(0, int),
        np.concatenate(predicted) if predicted else np.zeros(0, int),
    )
    scores = {}
    for c, letter in enumerate(CLASSES):
        if c == 0:
            continue
        tp = int(((g == c) & (p == c)).sum())
        prec = tp / max(int((p == c).sum()), 1)
        rec = tp / max(int((g == c).sum()), 1)
        scores[letter] = {
            "precision": round(prec, 3),
            "recall": round(rec, 3),
            "f1": round(2 * prec * rec / (prec + rec), 3) if tp else 0.0,
            "gold_tokens": int((g == c).sum()),
        }
    return scores
