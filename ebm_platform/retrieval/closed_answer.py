"""A closed question's answer (yes / no / maybe) read from the question *with* its evidence.

The verdict says which way a result points; a closed question asks something else: "Is being small
for gestational age a risk factor for retinopathy?" is answered "no" by a study whose results are all
"p = 0.111", and "yes" by one that found the association, whatever its sign. `ClosedAnswerModel`
reads a (question, evidence) pair: the evidence's results sentences (a results section's sentences
when the source has one, else its findings, else all its sentences), how many state significance,
no difference or a hedge, what the learned span classifier (the verdict model's, trained on
Evidence Inference) makes of them, and the question's form (is / does / can, a negation, an
alternative, a sceptical framing: "Stage I lung carcinoma: really an early stage?", "Is routine
drainage necessary?", "... is it the same?", which a study that confirms the premise of the
doubt answers no). A multinomial logistic regression over these 17 features predicts yes / no / maybe;
it is trained on PubMedQA's expert-labelled questions with each question's own abstract as the
evidence (`evaluation/closed_training.py`), and it says "maybe" when that class is the most probable.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ebm_platform.model_store import load_estimators, save_estimators
from ebm_platform.retrieval.findings import is_finding
from ebm_platform.retrieval.verdict import stated_probabilities

YES, NO, MAYBE = "yes", "no", "maybe"
RESULTS_SECTION = re.compile(r"result|finding", re.I)
NO_DIFFERENCE = re.compile(
    r"\bno (?:statistically )?significant\b|\bnot (?:statistically )?significant|\bnon-?significant|"
    r"\bdid not (?:significantly )?(?:differ|change|improve|reduce|increase|affect)|\bno (?:significant )?differences?\b|"
    r"\bsimilar\b|\bcomparable\b|\bwas not associated\b|\bno (?:effect|change|benefit|association|correlation)\b",
    re.I,
)
SIGNIFICANCE = re.compile(
    r"\bsignificant(?:ly)?\b|p\s*[<=]\s*0?\.0[0-4]|\bassociated with\b|\bcorrelat\w+|\bpredict\w*", re.I
)
HEDGE = re.compile(r"\bmay\b|\bmight\b|\bunclear\b|\bfurther\b|\bsuggest\w*|\bpossibl\w*|\bpotential\w*", re.I)
QUESTION_FORMS = {
    "negation": re.compile(r"\bnot\b|n't\b", re.I),
    "alternative (or)": re.compile(r"\bor\b", re.I),
    "opens with is / are": re.compile(r"^\s*(?:is|are)\b", re.I),
    "opens with do / does / did": re.compile(r"^\s*(?:do|does|did)\b", re.I),
    "opens with can / could / should": re.compile(r"^\s*(?:can|could|should)\b", re.I),
    "sceptical framing": re.compile(
        r"\b(?:really|truly|actually|always|necessar\w*|myths?|same|overrated|worth\w*|justified)\b", re.I
    ),
}
FEATURES = (
    "no-difference sentences",
    "significance sentences",
    "hedged sentences",
    "results sentences",
    *(f"question: {name}" for name in QUESTION_FORMS),
    "question words",
    *(f"span classifier {stat} {label}" for stat in ("mean", "max") for label in ("no diff", "decreased", "increased")),
)


def results_sentences(sentences: list[tuple[str, str | None]]) -> list[str]:
    """The (sentence, section) pairs' results: a results section's sentences when there is one,
    else the findings (`findings.is_finding`), else every sentence."""
    in_results = [s for s, section in sentences if section and RESULTS_SECTION.search(section.split(">")[-1])]
    return in_results or [s for s, section in sentences if is_finding(s, section)] or [s for s, _ in sentences]


def features(question: str, results: list[str], spans) -> np.ndarray:
    """The 17 features of one (question, results sentences) pair; `spans` is a fitted sentence
    classifier with `predict_proba` over the three Evidence Inference labels."""
    counts = [sum(bool(p.search(s)) for s in results) for p in (NO_DIFFERENCE, SIGNIFICANCE, HEDGE)]
    form = [float(bool(p.search(question))) for p in QUESTION_FORMS.values()]
    probabilities = stated_probabilities(spans, results) if results else np.zeros((1, 3))
    return np.array(
        [*counts, len(results), *form, len(question.split()), *probabilities.mean(0), *probabilities.max(0)],
        dtype=float,
    )


class ClosedAnswerModel:
    """Standardised features + multinomial logistic regression over yes / no / maybe, with the span
    classifier the features were computed with (so answers read evidence as training did)."""

    FILE = "closed_answer.skops"

    def __init__(self, spans, classifier, meta: dict) -> None:
        self.spans, self.classifier, self.meta = spans, classifier, meta

    @classmethod
    def train(
        cls, X: np.ndarray, labels: list[str], spans, meta: dict | None = None, C: float = 1.0
    ) -> ClosedAnswerModel:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        classifier = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=3000))
        classifier.fit(X, labels)
        return cls(spans, classifier, dict(meta or {}, trained_on=len(labels)))

    def predict(self, X: np.ndarray) -> list[str]:
        return [str(label) for label in self.classifier.predict(X)]

    def read(self, question: str, sentences: list[tuple[str, str | None]]) -> tuple[str, dict[str, float]]:
        """yes / no / maybe for the question over one source's (sentence, section) pairs, with the
        class probabilities."""
        x = features(question, results_sentences(sentences), self.spans)[None, :]
        probabilities = self.classifier.predict_proba(x)[0]
        classes = [str(c) for c in self.classifier.classes_]
        return classes[int(np.argmax(probabilities))], {c: round(float(p), 3) for c, p in zip(classes, probabilities)}

    def save(self, folder: Path) -> None:
        save_estimators(Path(folder) / self.FILE, {"spans": self.spans, "classifier": self.classifier}, self.meta)

    @classmethod
    def load(cls, folder: Path) -> ClosedAnswerModel | None:
        """The stored reader, or None when there is none or it was fitted on other features (a lake
        built by an earlier version: the bottom line then reads the cited evidence by the rules)."""
        stored = load_estimators(Path(folder) / cls.FILE)
        if stored is None:
            return None
        estimators, meta = stored
        classifier = estimators.get("classifier")
        if getattr(classifier, "n_features_in_", None) != len(FEATURES):
            return None
        return cls(estimators.get("spans"), classifier, meta)
