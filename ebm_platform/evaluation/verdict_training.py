"""Training the learned verdict on Evidence Inference: each annotated evidence span of a *train*
prompt, labelled with that prompt's label; scored on the validation prompts' spans beside the
offline rules and the majority class (the train split's most frequent label)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ebm_platform.benchmark.evidence_inference import labelled_prompts
from ebm_platform.evaluation.answers import majority, scores
from ebm_platform.retrieval.verdict import VerdictModel, offline_verdict, verdict_path


def spans(datasets_dir: Path, split: str) -> tuple[list[str], list[str]]:
    """Every evidence span of the split's labelled prompts (whitespace folded) and its label."""
    texts, labels = [], []
    for evidence, label in labelled_prompts(datasets_dir, split).select("evidence", "label").iter_rows():
        for span in evidence:
            text = re.sub(r"\s+", " ", span).strip()
            if len(text) >= 12:
                texts.append(text)
                labels.append(label)
    return texts, labels


def training_key(datasets_dir: Path) -> str:
    """Hash of the training code and the annotation files it reads."""
    digest = hashlib.sha256()
    for path in (Path(__file__), Path(__file__).parent.parent / "retrieval" / "verdict.py",
                 Path(datasets_dir) / "evidence_inference" / "v2_annotations.csv",
                 Path(datasets_dir) / "evidence_inference" / "prompts_merged.csv"):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def train_verdict_model(datasets_dir: Path) -> tuple[VerdictModel, dict]:
    """Fit on the train spans; report learned / rules / majority class on the validation spans."""
    train_texts, train_labels = spans(datasets_dir, "train")
    texts, gold = spans(datasets_dir, "validation")
    model = VerdictModel.train(train_texts, train_labels, {"key": training_key(datasets_dir)})
    report = {"learned": {**scores(gold, model.predict(texts)), "questions": len(gold)},
              "rules": {**scores(gold, [offline_verdict([t])[0] for t in texts]), "questions": len(gold)},
              "majority class": majority(train_labels, gold)}
    model.meta.update(validation_spans=report, beats_majority=report["learned"]["macro_f1"] > report["majority class"]["macro_f1"])
    return model, report


def ensure_verdict_model(lake: Path, datasets_dir: Path) -> VerdictModel:
    """The lake's verdict model, trained when missing or trained by other code or data."""
    key = training_key(datasets_dir)
    model = VerdictModel.load(verdict_path(lake))
    if model is None or model.meta.get("key") != key:
        model, _ = train_verdict_model(datasets_dir)
        model.save(verdict_path(lake))
    return model
