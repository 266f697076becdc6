"""EBM-NLP's crowd-labelled training abstracts as CoNLL lines (shared/datasets/ebm_nlp), read without the
tagger: the PICO tagger trains on them (`pico.ebm_nlp`) and the encoders' INT8 quantization is calibrated
on their text (`index.embeddings`, the fit abstracts only, never the tagger's dev tenth).

`ebmnlp_train_subset.txt` holds 960 abstracts of EBM-NLP's *training* split in CoNLL form
(`-DOCSTART- (PMID)`, then `TOKEN POS O LABEL` lines; LABEL is I-PAR, I-INT, I-OUT or O). An
abstract's text is its tokens joined by single spaces.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

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


def dev_indices(count: int, share: float = DEV_SHARE, seed: int = SEED) -> tuple[list[int], list[int]]:
    """(dev, fit) indices: a seeded `share` of `count` abstracts held out, the rest fitted."""
    order = np.random.default_rng(seed).permutation(count)
    n_dev = max(1, int(count * share))
    return sorted(order[:n_dev].tolist()), sorted(order[n_dev:].tolist())


def read_documents(datasets_dir: Path) -> list[tuple[str, list[tuple[str, str]]]]:
    """(PMID, [(token, label)]) of every abstract in the subset, in file order."""
    source = path(datasets_dir)
    if not source.is_file():
        raise FileNotFoundError(f"EBM-NLP training subset not found at {source} (set EBM_DATASETS_DIR)")
    return parse(source.read_text(encoding="utf-8").splitlines())


def fit_texts(datasets_dir: Path, count: int) -> list[str]:
    """The first `count` abstracts outside the dev tenth, as text (tokens joined by spaces), in file order."""
    documents = read_documents(datasets_dir)
    return [" ".join(token for token, _ in documents[i][1]) for i in dev_indices(len(documents))[1][:count]]
