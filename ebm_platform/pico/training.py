"""Train the PICO tagger on Evidence Inference's train split; score it and the rules on validation.

Token-level precision/recall/F1 per class in the EBM-NLP convention. The headline macro F1 is
over I and O, whose gold is projected from doctor-written strings; P's gold is a pattern proxy
(see `distant.py`) and is reported beside it, labelled as such, never in the headline.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ebm_platform.code_version import update_digest
from ebm_platform.index.embeddings import Encoder
from ebm_platform.intervals import unit_interval
from ebm_platform.pico.distant import Example, split_examples
from ebm_platform.pico.extractors import entity_labels, rule_entities
from ebm_platform.pico.spans import CLASSES, token_scores
from ebm_platform.pico.tagger import PicoTagger, Rarity, TaggerParams, features

HEADLINE = ("I", "O")


def example_features(
    examples: list[Example], encoder: Encoder, rarity: Rarity, progress: Callable[[str], None] | None = None
) -> list[np.ndarray]:
    """Features of each example from one forward pass of the embedder (batches of 64 texts)."""
    out: list[np.ndarray] = []
    for start in range(0, len(examples), 64):
        batch = examples[start : start + 64]
        encoded = encoder.encode_windows([e.words.text for e in batch], prefixes=[e.prefix for e in batch])
        out += [features(e.words, enc.tokens, enc.offsets, rarity) for e, enc in zip(batch, encoded)]
        if progress:
            progress(f"encoded {len(out)}/{len(examples)} articles")
    return out


def summarise(scores: dict[str, dict[str, float]]) -> dict:
    """Per-class scores with the headline macro F1 (I, O) and the macro including P (proxy)."""
    return {
        "classes": scores,
        "macro_f1": round(float(np.mean([scores[c]["f1"] for c in HEADLINE])), 4),
        "macro_f1_with_P_proxy": round(float(np.mean([s["f1"] for s in scores.values()])), 4),
    }


def headline_counts(gold: list[np.ndarray], predicted: list[np.ndarray]) -> np.ndarray:
    """(articles, headline classes, 3): true positive, predicted and gold words per article."""
    index = [CLASSES.index(c) for c in HEADLINE]
    return np.array(
        [
            [[((g == c) & (p == c)).sum(), (p == c).sum(), (g == c).sum()] for c in index]
            for g, p in zip(gold, predicted)
        ],
        dtype=np.float64,
    ).reshape(len(gold), len(index), 3)


def pooled_macro_f1(counts: np.ndarray) -> float:
    """Headline macro F1 of word counts pooled over articles (as `token_scores` pools them)."""
    tp, predicted, gold = counts.sum(0).T
    return float(np.mean(2 * tp / np.maximum(predicted + gold, 1.0)))


def validation_report(
    tagger: PicoTagger,
    examples: list[Example],
    xs: list[np.ndarray],
    others: dict[str, Callable[[str], list[dict]]] | None = None,
) -> dict:
    """Learned tagger (with its entity selector, and its head's word labels alone) vs rules vs the
    majority class (no entity anywhere) on the same articles, plus any `others` (name -> text-to-spans
    extractor, e.g. an LLM); each macro F1 with an article bootstrap 95% interval, and the learned
    tagger minus the rules paired over the same resampled articles."""
    gold, words = [e.labels for e in examples], [e.words for e in examples]
    predicted = {
        "learned": tagger.predict(words, xs),
        "learned_word_labels": tagger.predict(words, xs, select=False),
        **{
            name: [entity_labels(e.words, spans(e.words.text)) for e in examples]
            for name, spans in {"rules": rule_entities, **(others or {})}.items()
        },
        "majority_class": [np.zeros_like(g) for g in gold],
    }
    scores = {name: summarise(token_scores(gold, labels)) for name, labels in predicted.items()}
    counts = {name: headline_counts(gold, labels) for name, labels in predicted.items()}
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
        **scores,
        "learned_minus_rules_macro_f1": round(scores["learned"]["macro_f1"] - scores["rules"]["macro_f1"], 4),
        "macro_f1_interval_95": intervals,
        "interval": "percentile bootstrap over articles (2,000 resamples, seeded), words pooled as in the scores",
        "gold": "I and O projected from Evidence Inference's doctor-written prompts; P a pattern proxy",
    }


def train_and_validate(
    datasets_dir: Path,
    encoder: Encoder,
    params: TaggerParams = TaggerParams(),
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[PicoTagger, dict]:
    """Train on the train split (projector fitted there too), report on the validation split."""
    started = time.perf_counter()
    train, projector = split_examples(datasets_dir, "train", limit=limit, progress=progress)
    valid, _ = split_examples(datasets_dir, "validation", projector, limit=limit, progress=progress)
    if not train or not valid:
        raise ValueError("no Evidence Inference articles with prompts in the train or validation split")
    rarity = Rarity(dict(projector.df), projector.documents)
    train_x = example_features(train, encoder, rarity, progress)
    tagger = PicoTagger.train([e.words for e in train], train_x, [e.labels for e in train], rarity, params, progress)
    report = validation_report(tagger, valid, example_features(valid, encoder, rarity, progress))
    labels = np.concatenate([e.labels for e in train])
    report.update(
        {
            "train_articles": len(train),
            "train_tokens": int(labels.size),
            "train_label_share": {
                c: round(float((labels == i).mean()), 4) for i, c in enumerate(("none", "P", "I", "O"))
            },
            "encoder": encoder.description,
            "seconds": round(time.perf_counter() - started, 1),
        }
    )
    return tagger, report


def training_key(
    datasets_dir: Path, encoder_description: str, limit: int | None = None, params: TaggerParams = TaggerParams()
) -> str:
    """Hash of what a trained tagger depends on: the Evidence Inference prompts, splits and article
    files, the tagger and rules code, the encoder and the training parameters."""
    package = Path(__file__).resolve().parent.parent
    root = Path(datasets_dir) / "evidence_inference"
    digest = hashlib.sha256(json.dumps([encoder_description, limit, asdict(params)]).encode())
    sources = sorted((package / "pico").glob("*.py")) + [package / "graph" / "pico_rules.py"]
    data = [root / "prompts_merged.csv", *sorted((root / "splits").glob("*.txt"))]
    update_digest(digest, [*sources, *data])
    for path in sorted((root / "xml").glob("*.nxml")):
        digest.update(f"{path.name}:{path.stat().st_size}".encode())
    return digest.hexdigest()[:16]


def token_evaluation(
    datasets_dir: Path,
    settings,
    split: str = "validation",
    limit: int | None = None,
    llm: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """`ebm eval pico`: the lake's tagger, the rules (and the LLM when asked) on a split, token level."""
    from ebm_platform.index.embeddings import get_encoder
    from ebm_platform.pico.extractors import llm_extractor
    from ebm_platform.pico.tagger import read_meta, tagger_path

    folder = tagger_path(settings.lake)
    tagger = PicoTagger.load(folder)
    _, projector = split_examples(datasets_dir, "train")  # gold projected exactly as for training
    examples, _ = split_examples(datasets_dir, split, projector, limit=limit, progress=progress)
    encoder = get_encoder(settings.embedding_model, settings.embedding_backend)
    others = dict([llm_extractor(settings)]) if llm else {}
    report = validation_report(tagger, examples, example_features(examples, encoder, tagger.rarity, progress), others)
    report.update(
        {
            "split": split,
            "tagger": str(folder),
            "tagger_trained_at": read_meta(folder).get("trained_at"),
            "encoder": encoder.description,
        }
    )
    return report
