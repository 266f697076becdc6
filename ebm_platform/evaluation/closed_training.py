"""Training the closed-question reader (`retrieval/closed_answer.py`) on PubMedQA's 500 expert-labelled
questions (PQA-L outside PubMedQA's test set; the test set is not in this repository).

Each question is paired with its own abstract's contexts (the reasoning-required setting: the
abstract's conclusion, PubMedQA's LONG_ANSWER, is never read), and labelled with its final decision.
There is no train split, so the figures are cross-validated: ten stratified folds (seeded), each
question predicted by the model fitted on the other nine, beside the same run's baselines: the
majority class of the training folds and the verdict mapping the answer used before (the verdict
model over the same sentences, read as yes / no / maybe by `verdict.as_yes_no`). The model kept is
fitted on all 500. `fold_models` gives the ten fold models again, so that `ebm eval answers` never
answers a PubMedQA question with a model that was trained on it.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold

from ebm_platform import model_store
from ebm_platform.benchmark.sources import pubmedqa_path
from ebm_platform.code_version import update_digest
from ebm_platform.corpus import windows
from ebm_platform.corpus.windows import sentence_spans
from ebm_platform.evaluation.answers import confusion, scores
from ebm_platform.intervals import interval
from ebm_platform.retrieval import closed_answer, findings, lexical
from ebm_platform.retrieval.closed_answer import ClosedAnswerModel, features, results_sentences
from ebm_platform.retrieval.verdict import VerdictModel, as_yes_no

FOLDS, SEED = 10, 13


def pubmedqa_examples(datasets_dir: Path) -> list[dict]:
    """Each labelled PubMedQA question (PMID order) with its abstract's (sentence, section) pairs."""
    path = pubmedqa_path(datasets_dir)
    if not path.is_file():
        raise FileNotFoundError(f"no PubMedQA file at {path}")
    examples = []
    for pmid, record in sorted(json.loads(path.read_text(encoding="utf-8")).items()):
        sentences = [
            (context[start:end], label)
            for context, label in zip(record["CONTEXTS"], record["LABELS"])
            for start, end in sentence_spans(context)
        ]
        examples.append(
            {"pmid": pmid, "question": record["QUESTION"], "sentences": sentences, "label": record["final_decision"]}
        )
    return examples


def example_matrix(examples: list[dict], spans) -> np.ndarray:
    return np.vstack([features(e["question"], results_sentences(e["sentences"]), spans) for e in examples])


def folds(examples: list[dict]) -> list[np.ndarray]:
    """The ten seeded stratified folds' held-out indices."""
    labels = [e["label"] for e in examples]
    splitter = StratifiedKFold(FOLDS, shuffle=True, random_state=SEED)
    return [test for _, test in splitter.split(np.zeros(len(labels)), labels)]


def fold_models(examples: list[dict], spans, X: np.ndarray | None = None) -> dict[str, ClosedAnswerModel]:
    """PMID -> the model fitted on the folds that do not hold that question (its meta names how many
    it held out and its training folds' most frequent label)."""
    X = example_matrix(examples, spans) if X is None else X
    labels = np.array([e["label"] for e in examples])
    by_pmid = {}
    for held in folds(examples):
        train = np.setdiff1d(np.arange(len(examples)), held)
        meta = {"held_out": len(held), "majority": Counter(labels[train].tolist()).most_common(1)[0][0]}
        model = ClosedAnswerModel.train(X[train], list(labels[train]), spans, meta)
        by_pmid.update({examples[i]["pmid"]: model for i in held})
    return by_pmid


def cross_validation(
    examples: list[dict], verdict: VerdictModel, X: np.ndarray, models: dict[str, ClosedAnswerModel]
) -> dict:
    """Cross-validated accuracy / macro-F1 (with a bootstrap interval and the confusion matrix) of
    the fold readers (`fold_models`), the verdict mapping and the training folds' majority class,
    on the same questions."""
    gold = [e["label"] for e in examples]
    learned = [models[e["pmid"]].predict(x[None, :])[0] for e, x in zip(examples, X)]
    mapped = [as_yes_no(verdict.verdict(results_sentences(e["sentences"]))[0]) for e in examples]
    majority = [models[e["pmid"]].meta["majority"] for e in examples]
    report = {}
    for name, predicted in (("learned", learned), ("verdict mapping", mapped), ("majority class", majority)):
        correct = np.array([p == g for p, g in zip(predicted, gold)], dtype=float)
        report[name] = {
            **scores(gold, predicted),
            "accuracy_interval_95": [round(v, 4) for v in interval(correct)],
            "answers": dict(Counter(predicted).most_common()),
            "confusion": confusion(gold, predicted),
        }
    return {"questions": len(gold), "folds": FOLDS, "gold": dict(Counter(gold).most_common()), **report}


def training_key(datasets_dir: Path, verdict_key: str) -> str:
    """Hash of the verdict model's key (its span classifier computes features), the reader's code, the
    sentence splitting and findings rules it reads evidence with, and PubMedQA's file."""
    digest = hashlib.sha256(verdict_key.encode())
    update_digest(
        digest,
        (
            Path(__file__),
            Path(closed_answer.__file__),
            Path(findings.__file__),  # results_sentences falls back to the findings
            Path(lexical.__file__),  # the stems findings compare
            Path(windows.__file__),  # sentence_spans
            Path(model_store.__file__),  # how the model is stored
            pubmedqa_path(datasets_dir),
        ),
    )
    return digest.hexdigest()[:12]


def train_closed_model(datasets_dir: Path, verdict: VerdictModel) -> ClosedAnswerModel:
    """The reader fitted on all 500 questions, its cross-validation report in its meta."""
    examples = pubmedqa_examples(datasets_dir)
    X = example_matrix(examples, verdict.pipeline)
    model = ClosedAnswerModel.train(X, [e["label"] for e in examples], verdict.pipeline)
    model.meta.update(
        cross_validation=cross_validation(examples, verdict, X, fold_models(examples, verdict.pipeline, X)),
        training_data="PubMedQA PQA-L, 500 questions outside its test set; each abstract's contexts, not its conclusion",
    )
    return model
