"""The answer's `verdict`: the direction its core conclusion states, or `insufficient evidence`.

Offline, learned (`VerdictModel`, when the lake holds one: the `verdict_model` asset): a text
classifier trained on Evidence Inference's train-split evidence spans reads the core statements.
Offline, rules (deterministic, when no model is in the lake) over the core answer's statements, most relevant first): the first
statement that reports a comparison decides. No-difference language ("no significant", "did not
differ", "similar", p > 0.05) gives `no significant difference`; otherwise the balance of
increase words (increased, higher, improved, greater, ...) against decrease words (reduced, lower,
fewer, ...) gives `significantly increased` / `significantly decreased`; a statement with neither
is skipped, and when none reports a comparison the verdict is `insufficient evidence`.
With an LLM the model states the verdict in its answer (IRCOT_ANSWER_SCHEMA); when it does not,
these rules read its statements and the answer says so.
PubMedQA's yes / no / maybe is read from the same verdict (`as_yes_no`): an effect -> yes, no
significant difference -> no, insufficient evidence -> maybe (a mapping, labelled as such).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ebm_platform.lake_layout import LakeLayout
from ebm_platform.model_store import load_estimators, save_estimators
from ebm_platform.retrieval.evidence_sentences import SentenceScorer

INCREASED, DECREASED, NO_DIFFERENCE, INSUFFICIENT = (
    "significantly increased",
    "significantly decreased",
    "no significant difference",
    "insufficient evidence",
)
VERDICTS = (INCREASED, DECREASED, NO_DIFFERENCE, INSUFFICIENT)
_NO_DIFFERENCE = re.compile(
    r"\bno (?:statistically )?significant\b|\bnot (?:statistically )?significant(?:ly)?\b|\bnon-?significant|"
    r"\bdid not (?:significantly )?(?:differ|change|improve|reduce|increase|affect)|\bno (?:significant )?differences?\b|"
    r"\bsimilar\b|\bcomparable\b|\bn\.?s\.?\b|\bp\s*(?:>|=)\s*0?\.(?:0[5-9]|[1-9])|\bwas not associated\b|"
    r"\bno (?:effect|change|benefit)\b|\bdid not\b",
    re.I,
)
_UP = re.compile(
    r"\b(?:increas\w*|higher|greater|improv\w*|elevat\w*|longer|rais\w*|gain\w*|better|"
    r"enhanc\w*|superior|boost\w*)\b",
    re.I,
)
_DOWN = re.compile(
    r"\b(?:decreas\w*|lower\w*|reduc\w*|less|fewer|shorter|declin\w*|drop\w*|fell|fall\w*|"
    r"diminish\w*|worse|inferior|attenuat\w*|suppress\w*)\b",
    re.I,
)


def offline_verdict(statements: list[str]) -> tuple[str, str | None]:
    """The verdict and the statement it rests on (None when evidence is insufficient)."""
    for statement in statements:
        if _NO_DIFFERENCE.search(statement):
            return NO_DIFFERENCE, statement
        up, down = len(_UP.findall(statement)), len(_DOWN.findall(statement))
        if up != down:
            return (INCREASED if up > down else DECREASED), statement
    return INSUFFICIENT, None


def read_verdict(statements: list[str], model: VerdictModel | None = None) -> tuple[str, str | None]:
    """The verdict of ranked statements and the statement it rests on: the learned model when given, else the rules."""
    return model.verdict(statements) if model else offline_verdict(statements)


def as_yes_no(verdict: str) -> str:
    """PubMedQA's answer read from a verdict: effect -> yes, no difference -> no, else maybe."""
    return {INCREASED: "yes", DECREASED: "yes", NO_DIFFERENCE: "no"}.get(verdict, "maybe")


class VerdictModel:
    """A learned verdict: TF-IDF (words and word pairs) + logistic regression, trained on the
    annotated evidence spans of Evidence Inference's *train* split with their prompts' labels.
    At answer time each core statement gets class probabilities; they are summed with weights
    1, 1/2, 1/3 by the statement's rank and the largest sum is the verdict. `sentences`, when
    trained, is the scorer that chooses which sentences the offline answer quotes."""

    FILE = "verdict.skops"

    def __init__(self, pipeline, meta: dict, sentences: SentenceScorer | None = None) -> None:
        self.pipeline, self.meta, self.sentences = pipeline, meta, sentences

    @classmethod
    def train(cls, texts: list[str], labels: list[str], meta: dict | None = None) -> VerdictModel:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        pipeline = make_pipeline(
            TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
            LogisticRegression(C=4.0, max_iter=2000, class_weight="balanced"),
        )
        pipeline.fit(texts, labels)
        return cls(pipeline, dict(meta or {}, trained_on_spans=len(texts)))

    def predict(self, texts: list[str]) -> list[str]:
        return [str(label) for label in self.pipeline.predict(texts)]

    def verdict(self, statements: list[str]) -> tuple[str, str | None]:
        """The verdict over ranked statements and the statement that weighs most for it."""
        if not statements:
            return INSUFFICIENT, None
        probabilities = self.pipeline.predict_proba(statements)
        weights = np.array([1.0 / (rank + 1) for rank in range(len(statements))])[:, None]
        best = int(np.argmax((probabilities * weights).sum(axis=0)))
        basis = int(np.argmax(probabilities[:, best] * weights[:, 0]))
        return str(self.pipeline.classes_[best]), statements[basis]

    def save(self, folder: Path) -> None:
        sentences = self.sentences.pipeline if self.sentences else None
        save_estimators(Path(folder) / self.FILE, {"pipeline": self.pipeline, "sentences": sentences}, self.meta)

    @classmethod
    def load(cls, folder: Path) -> VerdictModel | None:
        stored = load_estimators(Path(folder) / cls.FILE)
        if stored is None:
            return None
        estimators, meta = stored
        sentences = estimators.get("sentences")
        return cls(estimators.get("pipeline"), meta, SentenceScorer(sentences) if sentences is not None else None)


def verdict_path(lake: Path) -> Path:
    return LakeLayout(lake).model("verdict")
