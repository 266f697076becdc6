"""EBM-NLP's crowd-labelled training abstracts (shared/datasets/ebm_nlp): the tagger's training data.

`ebmnlp_train_subset.txt` holds 960 abstracts of EBM-NLP's *training* split in CoNLL form
(`-DOCSTART- (PMID)`, then `TOKEN POS O LABEL` lines; LABEL is I-PAR, I-INT, I-OUT or O). An
abstract's text is its tokens joined by single spaces; each labelled token becomes a character
span, so the labels land on the project's own words (`spans.Words`) exactly as any other gold does.
A seeded tenth of the abstracts is the dev set for every choice (epochs, entity selection, the
blocking check and the reported figures); the expert-labelled test split is not in the datasets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ebm_platform.pico.distant import Example
from ebm_platform.pico.spans import Words, label_chars

FILE = Path("ebm_nlp") / "ebmnlp_train_subset.txt"
LABELS = {"I-PAR": "P", "I-INT": "I", "I-OUT": "O"}
DEV_SHARE = 0.1
SEED = 13


def path(datasets_dir: Path) -> Path:
    """The subset's file under the datasets folder."""
    return Path(datasets_dir) / FILE


def parse(lines: list[str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """(PMID, [(token, label)]) per abstract; a token line with an unknown label is an error."""
    documents: list[tuple[str, list[tuple[str, str]]]] = []
    for number, line in enumerate(lines, 1):
        if line.startswith("-DOCSTART-"):
            documents.append((line.split("(", 1)[-1].rstrip(")\n "), []))
            continue
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4 or (parts[3] != "O" and parts[3] not in LABELS) or not documents:
            raise ValueError(f"line {number}: expected 'TOKEN POS O LABEL' inside a -DOCSTART- document: {line!r}")
        documents[-1][1].append((parts[0], parts[3]))
    return [(pmid, tokens) for pmid, tokens in documents if tokens]


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
    source = path(datasets_dir)
    if not source.is_file():
        raise FileNotFoundError(f"EBM-NLP training subset not found at {source} (set EBM_DATASETS_DIR)")
    documents = parse(source.read_text(encoding="utf-8").splitlines())
    return [example(pmid, tokens) for pmid, tokens in documents[:limit]]


def dev_indices(count: int, share: float = DEV_SHARE, seed: int = SEED) -> tuple[list[int], list[int]]:
    """(dev, fit) indices: a seeded `share` of `count` abstracts held out, the rest fitted."""
    order = np.random.default_rng(seed).permutation(count)
    n_dev = max(1, int(count * share))
    return sorted(order[:n_dev].tolist()), sorted(order[n_dev:].tolist())
