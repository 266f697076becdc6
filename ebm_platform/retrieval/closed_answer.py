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
doubt answers no), and how the results disagree among themselves: contrast language ("however",
"but only in women"), the share of no-difference sentences, the span classifier's reading of the
last results sentence and how much its readings spread over the results sentences (10-fold CV on
PubMedQA's 500: "maybe" AUC 0.49 without these nine, 0.57 with them; macro-F1 0.426 -> 0.440 at the
same accuracy, five repeats of the CV). A multinomial logistic regression over these 26 features
predicts yes / no / maybe; it is trained on PubMedQA's expert-labelled questions with each
question's own abstract as the evidence (`evaluation/closed_training.py`). "Maybe" is rarely the
most probable class (55 of 500), so the reader abstains by a threshold: it says "maybe" when
P(maybe) reaches `maybe_threshold`, chosen with the regularisation by an inner cross-validation on
the training questions only, as the threshold with the best macro-F1 among those that cost no
accuracy there (`ABSTAIN_ACCURACY_COST`).
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
CONTRAST = re.compile(
    r"\bhowever\b|\bbut\b|\balthough\b|\bwhereas\b|\bonly\b|\bexcept\b|\bwhile\b|\bin contrast\b|"
    r"\bnevertheless\b|\bdespite\b",
    re.I,
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
SPAN_LABELS = ("no diff", "decreased", "increased")
FEATURES = (
    "no-difference sentences",
    "significance sentences",
    "hedged sentences",
    "results sentences",
    *(f"question: {name}" for name in QUESTION_FORMS),
    "question words",
    *(f"span classifier {stat} {label}" for stat in ("mean", "max") for label in SPAN_LABELS),
    "contrast sentences",
    "contrast share",
    "no-difference share",
    *(f"span classifier {stat} {label}" for stat in ("last", "spread") for label in SPAN_LABELS),
)
C_GRID = (0.03, 0.1, 1.0)  # the logistic regression's inverse regularisation, chosen by the inner CV
THRESHOLDS = tuple(round(float(t), 2) for t in np.arange(0.10, 0.42, 0.02))  # P(maybe) thresholds tried
# How much accuracy abstaining ("maybe") may cost on the inner CV: none. Five repeats of the outer 10-fold CV
# (fold seeds 13, 1-4): accuracy / macro-F1 0.636 / 0.439 at 0.00 (about 4 "maybe" answers, 1 right), 0.629 /
# 0.442 at 0.01, 0.620 / 0.454 at 0.02 (about 22, 4 right); 0.637 / 0.426 with the 17 features before and no
# threshold. A larger cost buys little macro-F1 with answers that were right: at 0.02, of the product's 27
# "maybe" answers on PubMedQA (seed 13) 5 were right and 16 replaced a right yes or no.
ABSTAIN_ACCURACY_COST = 0.0
INNER_FOLDS, INNER_SEED = 5, 17
NEVER = 1.01  # a threshold no probability reaches: the reader never abstains


def results_sentences(sentences: list[tuple[str, str | None]]) -> list[str]:
    """The (sentence, section) pairs' results: a results section's sentences when there is one,
    else the findings (`findings.is_finding`), else every sentence."""
    in_results = [s for s, section in sentences if section and RESULTS_SECTION.search(section.split(">")[-1])]
    return in_results or [s for s, section in sentences if is_finding(s, section)] or [s for s, _ in sentences]


def features(question: str, results: list[str], spans) -> np.ndarray:
    """The 26 features of one (question, results sentences) pair; `spans` is a fitted sentence
    classifier with `predict_proba` over the three Evidence Inference labels."""
    counts = [sum(bool(p.search(s)) for s in results) for p in (NO_DIFFERENCE, SIGNIFICANCE, HEDGE, CONTRAST)]
    form = [float(bool(p.search(question))) for p in QUESTION_FORMS.values()]
    probabilities = stated_probabilities(spans, results) if results else np.zeros((1, 3))
    share = 1.0 / max(len(results), 1)
    return np.array(
        [
            *counts[:3],
            len(results),
            *form,
            len(question.split()),
            *probabilities.mean(0),
            *probabilities.max(0),
            counts[3],
            counts[3] * share,
            counts[0] * share,
            *probabilities[-1],
            *probabilities.std(0),
        ],
        dtype=float,
    )


def decide(probabilities: np.ndarray, classes: list[str], threshold: float) -> list[str]:
    """The most probable class of each row, or maybe where P(maybe) reaches the threshold."""
    labels = [classes[i] for i in probabilities.argmax(1)]
    if MAYBE not in classes:
        return labels
    column = probabilities[:, classes.index(MAYBE)]
    return [MAYBE if p >= threshold else label for p, label in zip(column, labels)]


def _pipeline(C: float):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=3000))


def calibrate(X: np.ndarray, labels: list[str]) -> tuple[float, float, dict]:
    """(C, maybe threshold, inner report) from out-of-fold probabilities of an inner stratified CV over
    the training questions alone: per C, the threshold with the best macro-F1 among those whose
    accuracy is at most ABSTAIN_ACCURACY_COST below always answering the most probable class; the
    C whose chosen threshold scores best."""
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import StratifiedKFold

    y = np.array(labels)
    smallest = min(np.unique(y, return_counts=True)[1])
    if smallest < INNER_FOLDS:  # too few of a class to cross-validate: no abstaining
        return 1.0, NEVER, {}
    splitter = StratifiedKFold(INNER_FOLDS, shuffle=True, random_state=INNER_SEED)
    classes = sorted(set(labels))  # the classifier's column order
    best: dict = {}
    for C in C_GRID:
        probabilities = np.zeros((len(y), len(classes)))
        for train, held in splitter.split(X, y):
            probabilities[held] = _pipeline(C).fit(X[train], y[train]).predict_proba(X[held])
        floor = accuracy_score(y, decide(probabilities, classes, NEVER)) - ABSTAIN_ACCURACY_COST
        scored = [
            (float(f1_score(y, predicted, average="macro")), float(accuracy_score(y, predicted)), t)
            for t in (*THRESHOLDS, NEVER)
            for predicted in [decide(probabilities, classes, t)]
        ]
        f1, accuracy, threshold = max(s for s in scored if s[1] >= floor - 1e-9)
        if not best or f1 > best["macro_f1"]:
            best = {"C": C, "maybe_threshold": threshold, "macro_f1": f1, "accuracy": accuracy}
    return best["C"], best["maybe_threshold"], {"inner_cv": {k: round(v, 4) for k, v in best.items()}}


class ClosedAnswerModel:
    """Standardised features + multinomial logistic regression over yes / no / maybe, with the span
    classifier the features were computed with (so answers read evidence as training did)."""

    FILE = "closed_answer.skops"

    def __init__(self, spans, classifier, meta: dict) -> None:
        self.spans, self.classifier, self.meta = spans, classifier, meta

    @classmethod
    def train(cls, X: np.ndarray, labels: list[str], spans, meta: dict | None = None) -> ClosedAnswerModel:
        """Fitted on (X, labels) with the C and maybe threshold that `calibrate` chooses on them."""
        C, threshold, report = calibrate(X, labels)
        classifier = _pipeline(C).fit(X, labels)
        return cls(spans, classifier, dict(meta or {}, trained_on=len(labels), maybe_threshold=threshold, **report))

    @property
    def threshold(self) -> float:
        return float(self.meta.get("maybe_threshold", NEVER))

    def predict(self, X: np.ndarray) -> list[str]:
        classes = [str(c) for c in self.classifier.classes_]
        return decide(self.classifier.predict_proba(X), classes, self.threshold)

    def read(self, question: str, sentences: list[tuple[str, str | None]]) -> tuple[str, dict[str, float]]:
        """yes / no / maybe for the question over one source's (sentence, section) pairs, with the
        class probabilities."""
        x = features(question, results_sentences(sentences), self.spans)[None, :]
        probabilities = self.classifier.predict_proba(x)
        classes = [str(c) for c in self.classifier.classes_]
        return decide(probabilities, classes, self.threshold)[0], {
            c: round(float(p), 3) for c, p in zip(classes, probabilities[0])
        }

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
