"""Train the PICO tagger on EBM-NLP's crowd-labelled abstracts; score it, the rules and the
previous tagger on the dev tenth, and on Evidence Inference's projected validation gold as before.

Token-level precision/recall/F1 per class in the EBM-NLP convention. On EBM-NLP the headline macro
F1 is over P, I and O (`HEADLINE`). On Evidence Inference the gold of I and O is projected from
doctor-written strings and P's is a pattern proxy (see `distant.py`), so that figure's headline is
over I and O (`EI_HEADLINE`), with P reported beside it, labelled as a proxy.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ebm_platform.code_version import update_digest
from ebm_platform.index.embeddings import Encoder, WindowEncoding
from ebm_platform.intervals import unit_interval
from ebm_platform.pico import ebm_nlp
from ebm_platform.pico.distant import Example, Projector, split_examples
from ebm_platform.pico.extractors import entity_labels, rule_entities
from ebm_platform.pico.spans import CLASSES, token_scores
from ebm_platform.pico.tagger import PicoTagger, Rarity, TaggerParams, features

HEADLINE = ("P", "I", "O")
EI_HEADLINE = ("I", "O")
EBM_NLP_GOLD = "EBM-NLP crowd-aggregated P/I/O token labels (training split; a seeded tenth held out as dev)"
EI_GOLD = "I and O projected from Evidence Inference's doctor-written prompts; P a pattern proxy"


def encode_examples(
    examples: list[Example], encoder: Encoder, progress: Callable[[str], None] | None = None
) -> list[WindowEncoding]:
    """One forward pass of the embedder per example (batches of 64 texts)."""
    out: list[WindowEncoding] = []
    for start in range(0, len(examples), 64):
        batch = examples[start : start + 64]
        out += encoder.encode_windows([e.words.text for e in batch], prefixes=[e.prefix for e in batch])
        if progress:
            progress(f"encoded {len(out)}/{len(examples)} texts")
    return out


def example_features(
    examples: list[Example], encoded: list[WindowEncoding], rarity: Rarity, word_ids: bool = True
) -> list[np.ndarray]:
    """Each example's word features from its encoding, with the document frequencies of `rarity`
    (and its vocabulary's word ids, for a head with a word embedding)."""
    return [features(e.words, enc.tokens, enc.offsets, rarity, word_ids) for e, enc in zip(examples, encoded)]


def summarise(scores: dict[str, dict[str, float]], headline: Sequence[str] = HEADLINE) -> dict:
    """Per-class scores with the headline macro F1 (over `headline`) and the macro over all classes."""
    return {
        "classes": scores,
        "macro_f1": round(float(np.mean([scores[c]["f1"] for c in headline])), 4),
        "macro_f1_all_classes": round(float(np.mean([s["f1"] for s in scores.values()])), 4),
    }


def headline_counts(
    gold: list[np.ndarray], predicted: list[np.ndarray], headline: Sequence[str] = HEADLINE
) -> np.ndarray:
    """(texts, headline classes, 3): true positive, predicted and gold words per text."""
    index = [CLASSES.index(c) for c in headline]
    return np.array(
        [
            [[((g == c) & (p == c)).sum(), (p == c).sum(), (g == c).sum()] for c in index]
            for g, p in zip(gold, predicted)
        ],
        dtype=np.float64,
    ).reshape(len(gold), len(index), 3)


def pooled_macro_f1(counts: np.ndarray) -> float:
    """Headline macro F1 of word counts pooled over texts (as `token_scores` pools them)."""
    tp, predicted, gold = counts.sum(0).T
    return float(np.mean(2 * tp / np.maximum(predicted + gold, 1.0)))


def validation_report(
    tagger: PicoTagger,
    examples: list[Example],
    encoded: list[WindowEncoding],
    headline: Sequence[str] = HEADLINE,
    gold_note: str = EBM_NLP_GOLD,
    others: dict[str, Callable[[str], list[dict]]] | None = None,
    previous: PicoTagger | None = None,
) -> dict:
    """Learned tagger (with its entity selector, and its head's word labels alone) vs rules vs the
    majority class (no entity anywhere) on the same texts, plus the `previous` tagger and any
    `others` (name -> text-to-spans extractor, e.g. an LLM); each headline macro F1 with a text
    bootstrap 95% interval, and the learned tagger minus the rules paired over the same resamples."""
    gold, words = [e.labels for e in examples], [e.words for e in examples]
    xs = example_features(examples, encoded, tagger.rarity, bool(tagger.params.word_dim))
    predicted = {
        "learned": tagger.predict(words, xs),
        "learned_word_labels": tagger.predict(words, xs, select=False),
        **(
            {
                "previous_tagger": previous.predict(
                    words, example_features(examples, encoded, previous.rarity, bool(previous.params.word_dim))
                )
            }
            if previous
            else {}
        ),
        **{
            name: [entity_labels(e.words, spans(e.words.text)) for e in examples]
            for name, spans in {"rules": rule_entities, **(others or {})}.items()
        },
        "majority_class": [np.zeros_like(g) for g in gold],
    }
    scores = {name: summarise(token_scores(gold, labels), headline) for name, labels in predicted.items()}
    counts = {name: headline_counts(gold, labels, headline) for name, labels in predicted.items()}
    intervals = {
        name: [round(v, 4) for v in unit_interval(len(gold), lambda i, c=c: pooled_macro_f1(c[i]))]
        for name, c in counts.items()
        if name != "majority_class"
    }
    learned, rules = counts["learned"], counts["rules"]
    intervals["learned_minus_rules"] = [
        round(v, 4) for v in unit_interval(len(gold), lambda i: pooled_macro_f1(learned[i]) - pooled_macro_f1(rules[i]))
    ]
    return {
        "articles": len(examples),
        "tokens": int(sum(len(g) for g in gold)),
        "headline_classes": list(headline),
        **scores,
        "learned_minus_rules_macro_f1": round(scores["learned"]["macro_f1"] - scores["rules"]["macro_f1"], 4),
        "macro_f1_interval_95": intervals,
        "interval": "percentile bootstrap over texts (2,000 resamples, seeded), words pooled as in the scores",
        "gold": gold_note,
    }


def evidence_inference_report(
    tagger: PicoTagger,
    datasets_dir: Path,
    encoder: Encoder,
    limit: int | None = None,
    previous: PicoTagger | None = None,
    others: dict[str, Callable[[str], list[dict]]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """The tagger on Evidence Inference's validation split with the projected gold (headline I, O),
    the projection fitted on the train split exactly as the previous tagger was trained."""
    _, projector = split_examples(datasets_dir, "train", limit=limit, progress=progress)
    valid, _ = split_examples(datasets_dir, "validation", projector, limit=limit, progress=progress)
    if not valid:
        raise ValueError("no Evidence Inference articles with prompts in the validation split")
    encoded = encode_examples(valid, encoder, progress)
    return {
        **validation_report(tagger, valid, encoded, EI_HEADLINE, EI_GOLD, others, previous),
        "split": "validation",
    }


def rarity_of(examples: Sequence[Example]) -> Rarity:
    """Document frequencies of lower-cased words over the fitted texts."""
    projector = Projector.fit(e.words.text for e in examples)
    return Rarity(dict(projector.df), projector.documents)


def train_and_validate(
    datasets_dir: Path,
    encoder: Encoder,
    params: TaggerParams = TaggerParams(),
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[PicoTagger, dict]:
    """Train on EBM-NLP's abstracts but the dev tenth (which picks the epoch and fits the entity
    selector), report on that tenth, and on Evidence Inference's projected validation gold."""
    started = time.perf_counter()
    examples = ebm_nlp.read_examples(datasets_dir, limit)
    dev, fit = ebm_nlp.dev_indices(len(examples))
    if not fit:
        raise ValueError(f"too few EBM-NLP abstracts to train on ({len(examples)})")
    rarity = rarity_of([examples[i] for i in fit])
    encoded = encode_examples(examples, encoder, progress)
    xs = example_features(examples, encoded, rarity, bool(params.word_dim))
    ys = [e.labels for e in examples]
    tagger = PicoTagger.train([e.words for e in examples], xs, ys, rarity, params, progress, dev=dev)
    report = validation_report(tagger, [examples[i] for i in dev], [encoded[i] for i in dev])
    report["evidence_inference"] = evidence_inference_report(tagger, datasets_dir, encoder, limit, progress=progress)
    labels = np.concatenate([ys[i] for i in fit])
    report.update(
        {
            "split": "EBM-NLP dev tenth",
            "train_articles": len(fit),
            "train_tokens": int(labels.size),
            "train_label_share": {c: round(float((labels == i).mean()), 4) for i, c in enumerate(CLASSES)},
            "encoder": encoder.description,
            "seconds": round(time.perf_counter() - started, 1),
        }
    )
    return tagger, report


def training_key(
    datasets_dir: Path, encoder_description: str, limit: int | None = None, params: TaggerParams = TaggerParams()
) -> str:
    """Hash of what a trained tagger and its report depend on: the EBM-NLP subset, the Evidence
    Inference prompts, splits and article files (its second figure), the tagger and rules code,
    the encoder and the training parameters."""
    package = Path(__file__).resolve().parent.parent
    root = Path(datasets_dir) / "evidence_inference"
    digest = hashlib.sha256(json.dumps([encoder_description, limit, asdict(params)]).encode())
    sources = sorted((package / "pico").glob("*.py")) + [package / "graph" / "pico_rules.py"]
    data = [ebm_nlp.path(datasets_dir), root / "prompts_merged.csv", *sorted((root / "splits").glob("*.txt"))]
    update_digest(digest, [*sources, *data])
    for path in sorted((root / "xml").glob("*.nxml")):
        digest.update(f"{path.name}:{path.stat().st_size}".encode())
    return digest.hexdigest()[:16]
