"""PICO extraction quality: the token-level evaluation of `ebm eval pico` (the lake's tagger, the
rules, the previous tagger, an LLM) on EBM-NLP's dev tenth or Evidence Inference's validation
split, and the span overlap of the rules' names with Evidence Inference's doctor-written prompts.

Span overlap:
For each prompt and field (intervention, comparator, outcome) the gold string is compared with
every entity the extractor found in the prompt's article, by content-token overlap:
precision = |gold ∩ entity| / |entity|, recall = |gold ∩ entity| / |gold|, F1 their harmonic mean;
the best-F1 entity counts. Reported: mean precision, recall and F1 per field, and the share of
prompts whose best match reaches F1 >= 0.5.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ebm_platform.benchmark.evidence_inference import prompts
from ebm_platform.corpus import ebm_nlp_conll
from ebm_platform.corpus.readers import read_jats
from ebm_platform.corpus.windows import WindowParams, build_windows
from ebm_platform.graph.pico_rules import extract
from ebm_platform.index.embeddings import Encoder, export_dir
from ebm_platform.pico import ebm_nlp
from ebm_platform.pico.finetuned import FineTunedTagger, load_tagger
from ebm_platform.pico.tagger import PicoTagger, read_meta
from ebm_platform.pico.training import evidence_inference_report, validation_report

FIELD_TYPES = {
    "intervention": ("Intervention", "Arm"),
    "comparator": ("Comparator", "Arm", "Intervention"),
    "outcome": ("Outcome",),
}
_STOP = {
    "the",
    "a",
    "an",
    "of",
    "and",
    "or",
    "in",
    "on",
    "with",
    "for",
    "to",
    "at",
    "by",
    "group",
    "groups",
    "patients",
    "vs",
    "versus",
    "plus",
    "alone",
    "mg",
    "level",
    "levels",
    "score",
    "scores",
}


def content_tokens(text: str) -> set[str]:
    return {t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in _STOP}


def overlap(gold: str, candidate: str) -> tuple[float, float, float]:
    g, c = content_tokens(gold), content_tokens(candidate)
    if not g or not c:
        return 0.0, 0.0, 0.0
    hit = len(g & c)
    p, r = hit / len(c), hit / len(g)
    return p, r, (2 * p * r / (p + r) if hit else 0.0)


def article_entities(path: Path) -> dict[str, list[str]]:
    """Entity names by type over all windows of one article (sections as chunks, no embeddings)."""
    doc = read_jats(path.read_bytes(), str(path))
    section_groups: Callable = lambda blocks: _section_ids(blocks)  # noqa: E731
    by_type: dict[str, list[str]] = {}
    for window in build_windows(doc.doc_id, doc.text, WindowParams(), section_groups):
        for entity in extract(window["text"]).entities:
            by_type.setdefault(entity["type"], []).append(entity["name"])
    return by_type


def _section_ids(blocks) -> list[int]:
    ids, current, last = [], -1, None
    for block in blocks:
        if block.section != last:
            current, last = current + 1, block.section
        ids.append(current)
    return ids


def evaluate(
    datasets_dir: Path,
    split: str = "validation",
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Mean token-overlap P/R/F1 per field over the split's prompts."""
    frame = prompts(datasets_dir, split)
    articles = sorted(set(frame["pmcid"]))[:limit] if limit else sorted(set(frame["pmcid"]))
    frame = frame.filter(frame["pmcid"].is_in(articles))
    xml = Path(datasets_dir) / "evidence_inference" / "xml"
    cache: dict[str, dict[str, list[str]]] = {}
    sums = {f: [0.0, 0.0, 0.0, 0] for f in FIELD_TYPES}
    for row in frame.iter_rows(named=True):
        if row["pmcid"] not in cache:
            cache[row["pmcid"]] = article_entities(xml / f"{row['pmcid']}.nxml")
            if progress and len(cache) % 20 == 0:
                progress(f"extracted {len(cache)}/{len(articles)} articles")
        entities = cache[row["pmcid"]]
        for field, types in FIELD_TYPES.items():
            candidates = [name for t in types for name in entities.get(t, [])]
            best = max((overlap(row[field] or "", c) for c in candidates), key=lambda x: x[2], default=(0.0, 0.0, 0.0))
            acc = sums[field]
            acc[0] += best[0]
            acc[1] += best[1]
            acc[2] += best[2]
            acc[3] += best[2] >= 0.5
    total = frame.height
    return {
        "split": split,
        "articles": len(articles),
        "prompts": total,
        "mode": "offline rules",
        "fields": {
            f: {
                "precision": round(a[0] / total, 3),
                "recall": round(a[1] / total, 3),
                "f1": round(a[2] / total, 3),
                "match_rate_f1_ge_0.5": round(a[3] / total, 3),
            }
            for f, a in sums.items()
        }
        if total
        else {},
    }


def tagger_model(meta: dict) -> str:
    """A saved tagger's model, from its meta: "finetuned" or "lstm" ("conv": saved before the head
    was recorded)."""
    return meta.get("params", {}).get("head", "conv")


def previous_tagger(current: dict) -> FineTunedTagger | PicoTagger | None:
    """The tagger this environment keeps that passed its check and differs from the `current`
    tagger's meta in its model or its training data (the head over the encoder's token vectors,
    once the fine-tuned encoder replaced it; the Evidence Inference projection's before that),
    trained on the most texts (tests cache small taggers too), the newest of those."""

    def kind(meta: dict) -> tuple:
        return meta.get("training_data"), tagger_model(meta)

    kept = [read_meta(folder) | {"folder": folder} for folder in sorted((export_dir() / "pico_tagger").glob("*"))]
    others = [m for m in kept if m.get("beats_rules") and kind(m) != kind(current)]
    best = max(
        others, key=lambda m: (m.get("validation", {}).get("train_articles", 0), m.get("trained_at", "")), default=None
    )
    return load_tagger(best["folder"]) if best else None


def token_evaluation(
    datasets_dir: Path,
    tagger_folder: Path,
    encoder: Encoder,
    benchmark: str = "ebm-nlp",
    limit: int | None = None,
    others: dict[str, Callable[[str], list[dict]]] | None = None,
    previous: FineTunedTagger | PicoTagger | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """`ebm eval pico`: the tagger saved in `tagger_folder`, the rules, the `previous` tagger and any
    `others` at token level; on EBM-NLP's dev tenth (with the Evidence Inference projection figure
    beside it) or on Evidence Inference's validation split alone."""
    tagger = load_tagger(tagger_folder)
    if benchmark == "ebm-nlp":
        examples = ebm_nlp.read_examples(datasets_dir, limit)
        dev = [examples[i] for i in ebm_nlp_conll.dev_indices(len(examples))[0]]
        report = {
            **validation_report(tagger, dev, encoder, others=others, previous=previous, progress=progress),
            "split": "EBM-NLP dev tenth",
        }
        report["evidence_inference"] = evidence_inference_report(
            tagger, datasets_dir, encoder, limit, previous, progress=progress
        )
    elif benchmark == "evidence-inference":
        report = evidence_inference_report(tagger, datasets_dir, encoder, limit, previous, others, progress)
    else:
        raise ValueError(f"unknown PICO benchmark {benchmark!r} (ebm-nlp or evidence-inference)")
    meta = read_meta(tagger_folder)
    report.update(
        {
            "benchmark": benchmark,
            "tagger": str(tagger_folder),
            "tagger_trained_at": meta.get("trained_at"),
            "tagger_training_data": meta.get("training_data"),
            "previous_tagger_trained_at": previous.meta.get("trained_at") if previous else None,
            "tagger_model": tagger_model(meta),
            "previous_tagger_model": tagger_model(previous.meta) if previous else None,
            "encoder": encoder.description,
        }
    )
    return report
