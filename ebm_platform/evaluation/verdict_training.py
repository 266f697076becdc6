"""Training the learned verdict on Evidence Inference: each annotated evidence span of a *train*
prompt, labelled with that prompt's label and read with the prompt's arms; scored on the validation
prompts' spans beside the offline rules and the majority class (the train split's most frequent
label), as asked and with each question's arms exchanged (the gold label swapped), beside the
sentence read alone.

The same asset trains the answer's evidence-sentence scorer (`retrieval/evidence_sentences.py`)
on a seeded sample of train prompts: each prompt's question as the benchmark asks it, the
sentences of its article (title, abstract and body, split as windows are), positive when they hold
an annotated evidence span. It is scored on every validation prompt against the hand-set cosine
choice: with the prompt's own article as the only source (so retrieval is not measured here),
which of the three quoted sentences hold evidence, and the verdict read from them.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ebm_platform import model_store
from ebm_platform.benchmark import evidence_inference
from ebm_platform.benchmark.evidence_inference import labelled_prompts, question_text
from ebm_platform.benchmark.gold import fold, gold_for_spans
from ebm_platform.code_version import update_digest
from ebm_platform.corpus import readers, windows
from ebm_platform.corpus.readers import parse_jats
from ebm_platform.corpus.windows import flatten, sentence_spans, split_blocks
from ebm_platform.evaluation.answers import majority, scores
from ebm_platform.index.embeddings import Encoder
from ebm_platform.retrieval import evidence_sentences, features, lexical, questions
from ebm_platform.retrieval.evidence_sentences import TITLE, SentenceScorer, cosine_scores, sentence_features
from ebm_platform.retrieval.questions import question_anchors
from ebm_platform.retrieval.verdict import SWAPPED, Arms, VerdictModel, offline_verdict, swapped
from ebm_platform.vocabulary import Anchors

SENTENCE_PROMPTS = 300  # a sample of train prompts; the sentence scorer learns from every prompt of their articles (258 articles, 807 prompts)
QUOTED = 3  # sentences an offline answer quotes (answer.compose_offline)


def spans(datasets_dir: Path, split: str) -> tuple[list[str], list[str], list[Arms]]:
    """Every evidence span of the split's labelled prompts (whitespace folded), its label and its
    prompt's (intervention, comparator, outcome)."""
    texts, labels, arms = [], [], []
    prompts = labelled_prompts(datasets_dir, split).select("evidence", "label", "intervention", "comparator", "outcome")
    for evidence, label, *arm in prompts.iter_rows():
        for span in evidence:
            text = re.sub(r"\s+", " ", span).strip()
            if len(text) >= 12:
                texts.append(text)
                labels.append(label)
                arms.append(tuple(a or "" for a in arm))
    return texts, labels, arms


def prompt_sentences(
    datasets_dir: Path,
    split: str,
    encoder: Encoder,
    limit: int | None = None,
    seed: int = 13,
    progress: Callable[[str], None] | None = None,
    articles: int | None = None,
) -> list[dict]:
    """Labelled prompts (every prompt of the articles of a seeded sample of `limit`; of them, those of
    a seeded sample of `articles` articles) with their question, label, article sentences and their
    sections (the title, then each block's heading path, split as windows are), which sentences
    hold evidence, and each sentence's cosine with the question."""
    rows = list(labelled_prompts(datasets_dir, split).iter_rows(named=True))
    if limit and limit < len(rows):
        sampled = {rows[i]["pmcid"] for i in np.random.default_rng(seed).choice(len(rows), limit, replace=False)}
        rows = [row for row in rows if row["pmcid"] in sampled]
    pmcids = sorted({row["pmcid"] for row in rows})
    if articles and articles < len(pmcids):
        kept = {pmcids[i] for i in np.random.default_rng(seed).choice(len(pmcids), articles, replace=False)}
        rows = [row for row in rows if row["pmcid"] in kept]
    xml = Path(datasets_dir) / "evidence_inference" / "xml"
    articles: dict[str, tuple[list[str], list[str], np.ndarray]] = {}
    wanted, started, embedded = len({row["pmcid"] for row in rows}), time.perf_counter(), 0
    out = []
    for row in rows:
        if row["pmcid"] not in articles:
            article = parse_jats((xml / f"{row['pmcid']}.nxml").read_bytes())
            parts = [(TITLE, article.title), *((block.section, block.text) for block in split_blocks(article.markdown))]
            located = [(section, flatten(text[s:e])) for section, text in parts for s, e in sentence_spans(text)]
            sentences = [sentence for _, sentence in located]
            vectors = encoder.embed(sentences) if sentences else np.zeros((0, encoder.dim))
            articles[row["pmcid"]] = (sentences, [section for section, _ in located], vectors)
            embedded += len(sentences)
            if progress and (len(articles) % 20 == 0 or len(articles) == wanted):
                rate = embedded / max(time.perf_counter() - started, 1e-9)
                progress(
                    f"verdict_model: {split} sentences of {len(articles)}/{wanted} articles embedded "
                    f"({embedded} sentences, {rate:.0f}/s)"
                )
        sentences, sections, vectors = articles[row["pmcid"]]
        if not sentences:
            continue
        inside = {
            i for i, s in enumerate(sentences) if len(s) >= 40 and any(fold(s) in fold(e) for e in row["evidence"])
        }
        evidence = gold_for_spans([(i, fold(s)) for i, s in enumerate(sentences)], row["evidence"]) | inside
        question = question_text(row)
        out.append(
            {
                "question": question,
                "anchors": Anchors(
                    intervention=row["intervention"], comparator=row["comparator"], outcome=row["outcome"]
                ),
                "label": row["label"],
                "sentences": sentences,
                "sections": sections,
                "evidence": np.array([i in evidence for i in range(len(sentences))]),
                "cosines": vectors @ encoder.embed([question])[0],
            }
        )
    return out


def _features(prompt: dict) -> np.ndarray:
    return sentence_features(
        prompt["question"],
        question_anchors(prompt["question"]),
        prompt["sentences"],
        prompt["cosines"],
        prompt["sections"],
    )


def sentence_report(model: VerdictModel, prompts: list[dict], choices: dict[str, Callable[[dict], np.ndarray]]) -> dict:
    """Per way of choosing the quoted sentences: the share of prompts whose first quoted sentence
    holds evidence (P@1), whose three quoted hold any (R@3), and the verdict's accuracy / macro-F1."""
    report = {}
    for name, score in choices.items():
        first = any_of = 0
        verdicts = []
        for prompt in prompts:
            top = np.argsort(-score(prompt), kind="stable")[:QUOTED]
            first += bool(prompt["evidence"][top[0]])
            any_of += bool(prompt["evidence"][top].any())
            verdicts.append(model.verdict([prompt["sentences"][i] for i in top], prompt["anchors"])[0])
        report[name] = {
            "P@1": round(first / len(prompts), 4),
            f"R@{QUOTED}": round(any_of / len(prompts), 4),
            **scores([p["label"] for p in prompts], verdicts),
            "questions": len(prompts),
        }
    return report


def sample_articles(limit: int | None) -> int | None:
    """Articles per split the sentence scorer is fitted and scored on under a training limit (a
    quarter of it: full articles cost a hundred times an abstract to embed); None: every prompt."""
    return max(2, limit // 4) if limit else None


def training_key(datasets_dir: Path, encoder_description: str = "", limit: int | None = None) -> str:
    """Hash of the training code, the encoder, the training limit and the annotation files it reads."""
    digest = hashlib.sha256(f"{encoder_description}|{limit or 0}".encode())
    update_digest(
        digest,
        (
            Path(__file__),
            Path(__file__).parent.parent / "retrieval" / "verdict.py",
            Path(evidence_sentences.__file__),
            Path(features.__file__),  # the section patterns the sentence scorer reads
            Path(questions.__file__),  # reads the question's anchors
            Path(evidence_inference.__file__),  # the prompts' order, which the seeded sample is drawn from
            Path(readers.__file__),  # the articles' text (parse_jats)
            Path(windows.__file__),  # the sentences (sentence_spans, flatten)
            Path(lexical.__file__),  # the stems the sentence features and the question parser compare
            Path(model_store.__file__),  # how the model is stored
            Path(datasets_dir) / "evidence_inference" / "v2_annotations.csv",
            Path(datasets_dir) / "evidence_inference" / "prompts_merged.csv",
        ),
    )
    return digest.hexdigest()[:12]


def train_verdict_model(
    datasets_dir: Path, encoder: Encoder, progress: Callable[[str], None] | None = None, limit: int | None = None
) -> VerdictModel:
    """Fit on the train spans and report learned / rules / majority class on the validation spans;
    then fit the sentence scorer on sampled train prompts and report it on the validation prompts
    (both reports in the model's meta). `limit` samples the scorer's articles (`sample_articles`)."""
    train_texts, train_labels, train_arms = spans(datasets_dir, "train")
    texts, gold, arms = spans(datasets_dir, "validation")
    key = training_key(datasets_dir, encoder.description, limit)
    model = VerdictModel.train(train_texts, train_labels, train_arms, {"key": key, "training_limit": limit or 0})
    exchanged = [SWAPPED.get(label, label) for label in gold]
    sentence_alone = model.predict(texts)
    report = {
        "learned": {**scores(gold, model.predict(texts, arms)), "questions": len(gold)},
        "learned, the arms exchanged in the question": {
            **scores(exchanged, model.predict(texts, [swapped(a) for a in arms])),
            "questions": len(gold),
        },
        "sentence alone (no question)": {**scores(gold, sentence_alone), "questions": len(gold)},
        "sentence alone, the arms exchanged": {**scores(exchanged, sentence_alone), "questions": len(gold)},
        "rules": {**scores(gold, [offline_verdict([t])[0] for t in texts]), "questions": len(gold)},
        "majority class": majority(train_labels, gold),
    }
    model.meta.update(
        validation_spans=report, beats_majority=report["learned"]["macro_f1"] > report["majority class"]["macro_f1"]
    )
    articles = sample_articles(limit)
    fit = prompt_sentences(datasets_dir, "train", encoder, SENTENCE_PROMPTS, progress=progress, articles=articles)
    if progress:
        progress(f"verdict_model: sentence scorer from {len(fit)} train prompts")
    model.sentences = SentenceScorer.train(
        np.vstack([_features(p) for p in fit]), np.concatenate([p["evidence"] for p in fit])
    )
    valid = prompt_sentences(datasets_dir, "validation", encoder, progress=progress, articles=articles)
    quoted = sentence_report(
        model,
        valid,
        {
            "learned": lambda p: model.sentences.scores(_features(p)),
            "cosine": lambda p: cosine_scores(p["sentences"], p["cosines"]),
            "the evidence sentences (where located)": lambda p: p["evidence"].astype(float),
        },
    )
    quoted["majority class"] = majority(train_labels, [p["label"] for p in valid])
    model.meta.update(
        sentence_scorer={
            "train_prompts": len(fit),
            "weights": model.sentences.weights(),
            "validation": quoted,
            "setting": "each validation prompt's own article as the only source"
            + (f"; the prompts of {articles} articles per split (training limit {limit})" if limit else ""),
        }
    )
    if progress:
        progress(
            f"verdict_model: sentence scorer on {len(valid)} validation prompts, P@1 "
            f"{quoted['learned']['P@1']:.3f} vs cosine {quoted['cosine']['P@1']:.3f}, verdict accuracy "
            f"{quoted['learned']['accuracy']:.3f} vs {quoted['cosine']['accuracy']:.3f}"
        )
    return model
