"""EBM-NLP's training subset: the reader, the labels on the project's words, the dev tenth."""

import numpy as np
import pytest

from ebm_platform.corpus import ebm_nlp_conll
from ebm_platform.pico import ebm_nlp
from ebm_platform.pico.spans import CLASSES

LINES = [
    "-DOCSTART- (111)",
    "",
    "Hip NN O I-INT",
    "strengthening NN O I-INT",
    "in NN O O",
    "runners NN O I-PAR",
    "with NN O I-PAR",
    "knee-pain NN O I-PAR",
    ". NN O O",
    "",
    "Pain NN O I-OUT",
    "fell NN O O",
    "",
    "-DOCSTART- (222)",
    "",
    "Placebo NN O I-INT",
]


def test_abstracts_are_parsed_and_their_labels_land_on_the_projects_words():
    documents = ebm_nlp_conll.parse(LINES)
    assert [pmid for pmid, _ in documents] == ["111", "222"] and len(documents[0][1]) == 9
    example = ebm_nlp.example(*documents[0])
    assert example.words.text == "Hip strengthening in runners with knee-pain . Pain fell"
    labelled = {t: CLASSES[c] for t, c in zip(example.words.tokens, example.labels)}
    assert labelled == {
        "Hip": "I",
        "strengthening": "I",
        "in": "none",
        "runners": "P",
        "with": "P",
        "knee-pain": "P",
        ".": "none",
        "Pain": "O",
        "fell": "none",
    }


def test_a_malformed_line_is_an_error_that_names_it():
    with pytest.raises(ValueError, match="line 3"):
        ebm_nlp_conll.parse(["-DOCSTART- (1)", "", "Hip NN O I-XYZ"])
    with pytest.raises(ValueError, match="line 1"):
        ebm_nlp_conll.parse(["Hip NN O O"])  # a token before any document


def test_the_dev_tenth_is_seeded_disjoint_and_complete():
    dev, fit = ebm_nlp_conll.dev_indices(960)
    assert len(dev) == 96 and not set(dev) & set(fit) and sorted(dev + fit) == list(range(960))
    assert ebm_nlp_conll.dev_indices(960) == (dev, fit)
    assert ebm_nlp_conll.dev_indices(960, seed=14)[0] != dev


def test_calibration_texts_are_fit_abstracts_never_the_dev_tenth(datasets_dir):
    """INT8 quantization is calibrated on abstracts the tagger trains on, never on those it is judged by."""
    documents = ebm_nlp_conll.read_documents(datasets_dir)
    dev, fit = ebm_nlp_conll.dev_indices(len(documents))
    texts = ebm_nlp_conll.fit_texts(datasets_dir, 40)
    as_text = [" ".join(token for token, _ in tokens) for _, tokens in documents]
    assert texts == [as_text[i] for i in fit[:40]]
    assert not {as_text[i] for i in dev} & set(texts)


def test_the_shared_subset_reads_as_its_readme_counts(datasets_dir):
    """960 abstracts and 262,127 labelled tokens: P 30,382, I 25,218, O 32,313 (the README's counts)."""
    documents = ebm_nlp_conll.parse(ebm_nlp_conll.path(datasets_dir).read_text(encoding="utf-8").splitlines())
    labels = [label for _, tokens in documents for _, label in tokens]
    assert len(documents) == 960 and len(labels) == 262_127
    assert [labels.count(f"I-{k}") for k in ("PAR", "INT", "OUT")] == [30_382, 25_218, 32_313]
    examples = ebm_nlp.read_examples(datasets_dir, limit=20)
    share = np.concatenate([e.labels for e in examples])
    assert len(examples) == 20 and all(len(e.labels) == len(e.words) for e in examples)
    assert {CLASSES[c] for c in np.unique(share)} == set(CLASSES)
