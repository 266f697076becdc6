"""EBM-NLP's crowd-labelled training abstracts (shared/datasets/ebm_nlp, read by `corpus.ebm_nlp_conll`): the
tagger's training data. An abstract's text is its tokens joined by single spaces; each labelled token becomes a character
span, so the labels land on the project's own words (`spans.Words`) exactly as any other gold does.
A seeded tenth of the abstracts is the dev set for every choice (epochs, entity selection, the
blocking check and the reported figures); the expert-labelled test split is not in the datasets.
"""

from __future__ import annotations

from pathlib import Path

from ebm_platform.corpus.ebm_nlp_conll import LABELS, read_documents
from ebm_platform.pico.distant import Example
from ebm_platform.pico.spans import Words, label_chars


def example(pmid: str, tokens: list[tuple[str, str]]) -> Example:
    """One abstract: its tokens joined by spaces, each labelled token's characters marked."""
    text, spans, at = "", [], 0
    for token, label in tokens:
        if text:
            text += " "
            at += 1
        text += token
        if label in LABELS:
            spans.append((at, at + len(token), LABELS[label]))
        at += len(token)
    words = Words.of(text)
    return Example(pmid, words, label_chars(words, spans), 0)


def read_examples(datasets_dir: Path, limit: int | None = None) -> list[Example]:
    """Every abstract of the subset (the first `limit` when given), in file order."""
    return [example(pmid, tokens) for pmid, tokens in read_documents(datasets_dir)[:limit]]
