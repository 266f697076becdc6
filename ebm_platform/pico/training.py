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
from ebm_platform.corpus import ebm_nlp_conll
from ebm_platform.index.embeddings import Encoder, WindowEncoding
from ebm_platform.intervals import unit_interval
from ebm_platform.pico import ebm_nlp
from ebm_platform.pico.distant import Example, Projector, split_examples
from ebm_platform.pico.extractors import entity_labels, rule_entities
from ebm_platform.pico.finetuned import FineTunedTagger, FineTuneParams
from ebm_platform.pico.spans import CLASSES, token_scores
from ebm_platform.pico.tagger import PicoTagger, Rarity, TaggerParams, features

Tagger = FineTunedTagger | PicoTagger

HEADLINE = ("P", "I", "O")
EI_HEADLINE = ("I", "O")
EBM_NLP_GOLD = "EBM-NLP crowd-aggregated P/I/O token labels (training split; a seeded tenth held out as dev)"
TAGGING_ONLY = {"windows.py", "names.py"}  # apply a trained tagger to a lake's windows; training never reads them
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


def predictions(
    tagger: Tagger, examples: list[Example], encoder: Encoder, progress: Callable[[str], None] | None = None
) -> dict[str, list[np.ndarray]]:
    """The tagger's word labels per example ("learned"); for a head over the encoder's token vectors
    also its labels before the entity selector ("learned_word_labels")."""
    if isinstance(tagger, FineTunedTagger):
        return {"learned": tagger.label_words([e.words for e in examples])}
    xs = example_features(
        examples, encode_examples(examples, encoder, progress), tagger.rarity, bool(tagger.params.word_dim)
    )
    words = [e.words for e in examples]
    return {"learned": tagger.predict(words, xs), "learned_word_labels": tagger.predict(words, xs, select=False)}


def validation_report(
    tagger: Tagger,
    examples: list[Example],
    encoder: Encoder,
    headline: Sequence[str] = HEADLINE,
    gold_note: str = EBM_NLP_GOLD,
    others: dict[str, Callable[[str], list[dict]]] | None = None,
    previous: Tagger | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Learned tagger (and, for a head with an entity selector, its word labels alone) vs rules vs
    the majority class (no entity anywhere) on the same texts, plus the `previous` tagger and any
    `others` (name -> text-to-spans extractor, e.g. an LLM); each headline macro F1 with a text
    bootstrap 95% interval, and the learned tagger minus the rules paired over the same resamples."""
    gold = [e.labels for e in examples]
    predicted = {
        **predictions(tagger, examples, encoder, progress),
        **({"previous_tagger": predictions(previous, examples, encoder, progress)["learned"]} if previous else {}),
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
    tagger: Tagger,
    datasets_dir: Path,
    encoder: Encoder,
    limit: int | None = None,
    previous: Tagger | None = None,
    others: dict[str, Callable[[str], list[dict]]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """The tagger on Evidence Inference's validation split with the projected gold (headline I, O),
    the projection fitted on the train split exactly as the previous tagger was trained."""
    _, projector = split_examples(datasets_dir, "train", limit=limit, progress=progress)
    valid, _ = split_examples(datasets_dir, "validation", projector, limit=limit, progress=progress)
    if not valid:
        raise ValueError("no Evidence Inference articles with prompts in the validation split")
    return {
        **validation_report(tagger, valid, encoder, EI_HEADLINE, EI_GOLD, others, previous, progress),
        "split": "validation",
    }


def rarity_of(examples: Sequence[Example]) -> Rarity:
    """Document frequencies of lower-cased words over the fitted texts."""
    projector = Projector.fit(e.words.text for e in examples)
    return Rarity(dict(projector.df), projector.documents)


def train_and_validate(
    folder: Path,
    datasets_dir: Path,
    encoder: Encoder,
    params: FineTuneParams | TaggerParams = FineTuneParams(),
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[Tagger, dict]:
    """Train on EBM-NLP's abstracts but the dev tenth, report on that tenth and on Evidence
    Inference's projected validation gold. `params` picks the model: MiniLM fine-tuned end to end
    (`FineTuneParams`, the default; its weights are written to `folder`) or a head over the
    encoder's token vectors (`TaggerParams`; the dev tenth picks its epoch and entity selector)."""
    started = time.perf_counter()
    examples = ebm_nlp.read_examples(datasets_dir, limit)
    dev, fit = ebm_nlp_conll.dev_indices(len(examples))
    if not fit:
        raise ValueError(f"too few EBM-NLP abstracts to train on ({len(examples)})")
    if isinstance(params, FineTuneParams):
        tagger: Tagger = FineTunedTagger.train(Path(folder), examples, dev, params, progress)
    else:
        rarity = rarity_of([examples[i] for i in fit])
        xs = example_features(examples, encode_examples(examples, encoder, progress), rarity, bool(params.word_dim))
        tagger = PicoTagger.train(
            [e.words for e in examples], xs, [e.labels for e in examples], rarity, params, progress, dev=dev
        )
    report = validation_report(tagger, [examples[i] for i in dev], encoder, progress=progress)
    report["evidence_inference"] = evidence_inference_report(tagger, datasets_dir, encoder, limit, progress=progress)
    labels = np.concatenate([examples[i].labels for i in fit])
    report.update(
        {
            "split": "EBM-NLP dev tenth",
            "model": params.head,
            "train_articles": len(fit),
            "train_tokens": int(labels.size),
            "train_label_share": {c: round(float((labels == i).mean()), 4) for i, c in enumerate(CLASSES)},
            "encoder": encoder.description,
            "inference": tagger.inference if isinstance(tagger, FineTunedTagger) else encoder.description,
            "seconds": round(time.perf_counter() - started, 1),
        }
    )
    return tagger, report


def training_key(
    datasets_dir: Path,
    encoder_description: str,
    limit: int | None = None,
    params: FineTuneParams | TaggerParams = FineTuneParams(),
) -> str:
    """Hash of what a trained tagger and its report depend on: the EBM-NLP subset, the Evidence
    Inference prompts, splits and article files (its second figure), the tagger and rules code
    (not the modules that only apply a trained tagger: `TAGGING_ONLY`), the encoder and the
    training parameters."""
    package = Path(__file__).resolve().parent.parent
    root = Path(datasets_dir) / "evidence_inference"
    digest = hashlib.sha256(json.dumps([encoder_description, limit, asdict(params)]).encode())
    sources = [p for p in sorted((package / "pico").glob("*.py")) if p.name not in TAGGING_ONLY]
    sources += [package / "graph" / "pico_rules.py", package / "bundled_model.py"]
    data = [ebm_nlp_conll.path(datasets_dir), root / "prompts_merged.csv", *sorted((root / "splits").glob("*.txt"))]
    update_digest(digest, [*sources, *data])
    for path in sorted((root / "xml").glob("*.nxml")):
        digest.update(f"{path.name}:{path.stat().st_size}".encode())
    return digest.hexdigest()[:16]
