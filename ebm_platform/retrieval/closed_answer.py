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
same accuracy, five repeats of the CV), and how the results sentences *about the question* read
(`question_shares`: a study of many outcomes answers "Is X associated with Y?" by its sentences that
name X and Y; 10-fold CV, ten fold seeds: accuracy / macro-F1 0.632 / 0.455 without these four, 0.636 /
0.471 with them, docs/evaluation.md). A multinomial logistic regression over these 30 features
predicts yes / no / maybe; it is trained on PubMedQA's expert-labelled questions with each
question's own abstract as the evidence (`evaluation/closed_training.py`). The most probable class
favours "yes" (276 of 500) and rarely is "maybe" (55), so the reader answers the class whose
probability times its class weight is largest: the weights of "maybe" and "no" ("yes" 1) are chosen
with the regularisation by an inner cross-validation on the training questions only, as the pair with
the best macro-F1 among those that cost no accuracy there (`ABSTAIN_ACCURACY_COST`).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ebm_platform.model_store import load_estimators, save_estimators
from ebm_platform.retrieval.evidence_sentences import share_named
from ebm_platform.retrieval.findings import is_finding
from ebm_platform.retrieval.lexical import stems
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
    "no-difference share of the question's sentences",
    "significance share of the question's sentences",
    "no-difference share weighted by the question's words",
    "significance share weighted by the question's words",
)
C_GRID = (0.03, 0.1, 1.0)  # the logistic regression's inverse regularisation, chosen by the inner CV
# Class weights tried (P(class) x weight decides; "yes" keeps 1): "maybe" from never favoured to five times,
# "no" from slightly against to 1.6 times.
MAYBE_WEIGHTS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0)
NO_WEIGHTS = (0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.6)
# How much accuracy the weights may cost on the inner CV: none. Ten repeats of the outer 10-fold CV (fold
# seeds 13, 1-9) on PubMedQA's 500: accuracy / macro-F1 0.632 / 0.455 with both weights chosen, against
# 0.634 / 0.439 with a P(maybe) threshold alone (the reader before 2026-12-05; same folds): the gain is in "no"
# (about 153 "no" answers instead of 133, recall 0.47 -> 0.54). A cost of 0.01 gave 0.626 / 0.463 (five repeats)
# with twice as many "maybe" answers, most of them wrong.
ABSTAIN_ACCURACY_COST = 0.0
INNER_FOLDS, INNER_SEED = 5, 17
ARGMAX: dict[str, float] = {}  # no class weights: the most probable class answers


def results_sentences(sentences: list[tuple[str, str | None]]) -> list[str]:
    """The (sentence, section) pairs' results: a results section's sentences when there is one,
    else the findings (`findings.is_finding`), else every sentence."""
    in_results = [s for s, section in sentences if section and RESULTS_SECTION.search(section.split(">")[-1])]
    return in_results or [s for s, section in sentences if is_finding(s, section)] or [s for s, _ in sentences]


def question_shares(question: str, results: list[str]) -> list[float]:
    """How the results sentences about the question read: the shares of no-difference and of
    significance sentences among the question's sentences (those naming at least half as many of the
    question's words as the sentence naming most), then both shares weighted by the share of the
    question's words each sentence names (all sentences alike when none names one)."""
    if not results:
        return [0.0] * 4
    wanted = stems(question)
    named = np.array([share_named(wanted, stems(s)) for s in results])
    weights = named / named.sum() if named.sum() else np.full(len(results), 1.0 / len(results))
    about = named >= named.max() / 2
    found = [np.array([bool(p.search(s)) for s in results], dtype=float) for p in (NO_DIFFERENCE, SIGNIFICANCE)]
    return [*(float(f[about].mean()) for f in found), *(float(weights @ f) for f in found)]


def features(question: str, results: list[str], spans) -> np.ndarray:
    """The 30 features of one (question, results sentences) pair; `spans` is a fitted sentence
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
            *question_shares(question, results),
        ],
        dtype=float,
    )


def decide(probabilities: np.ndarray, classes: list[str], weights: dict[str, float]) -> list[str]:
    """Each row's class with the largest probability times its weight (a class not in `weights`: 1)."""
    scale = np.array([weights.get(c, 1.0) for c in classes])
    return [classes[i] for i in (probabilities * scale).argmax(1)]


def _pipeline(C: float):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=3000))


def calibrate(X: np.ndarray, labels: list[str]) -> tuple[float, dict[str, float], dict]:
    """(C, class weights, inner report) from out-of-fold probabilities of an inner stratified CV over
    the training questions alone: per C, the weights with the best macro-F1 among those whose
    accuracy is at most ABSTAIN_ACCURACY_COST below always answering the most probable class; the
    C whose chosen weights score best."""
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import StratifiedKFold

    y = np.array(labels)
    smallest = min(np.unique(y, return_counts=True)[1])
    if smallest < INNER_FOLDS:  # too few of a class to cross-validate: the most probable class answers
        return 1.0, ARGMAX, {}
    splitter = StratifiedKFold(INNER_FOLDS, shuffle=True, random_state=INNER_SEED)
    classes = sorted(set(labels))  # the classifier's column order
    best: dict = {}
    for C in C_GRID:
        probabilities = np.zeros((len(y), len(classes)))
        for train, held in splitter.split(X, y):
            probabilities[held] = _pipeline(C).fit(X[train], y[train]).predict_proba(X[held])
        floor = accuracy_score(y, decide(probabilities, classes, ARGMAX)) - ABSTAIN_ACCURACY_COST
        scored = [
            (float(f1_score(y, predicted, average="macro")), float(accuracy_score(y, predicted)), maybe, no)
            for maybe in MAYBE_WEIGHTS
            for no in NO_WEIGHTS
            for predicted in [decide(probabilities, classes, {MAYBE: maybe, NO: no})]
        ]
        f1, accuracy, maybe, no = max(s for s in scored if s[1] >= floor - 1e-9)
        if not best or f1 > best["macro_f1"]:
            best = {"C": C, "maybe_weight": maybe, "no_weight": no, "macro_f1": f1, "accuracy": accuracy}
    weights = {MAYBE: best["maybe_weight"], NO: best["no_weight"]}
    return best["C"], weights, {"inner_cv": {k: round(v, 4) for k, v in best.items()}}


class ClosedAnswerModel:
    """Standardised features + multinomial logistic regression over yes / no / maybe, with the span
    classifier the features were computed with (so answers read evidence as training did)."""

    FILE = "closed_answer.skops"

    def __init__(self, spans, classifier, meta: dict) -> None:
        self.spans, self.classifier, self.meta = spans, classifier, meta

    @classmethod
    def train(cls, X: np.ndarray, labels: list[str], spans, meta: dict | None = None) -> ClosedAnswerModel:
        """Fitted on (X, labels) with the C and class weights that `calibrate` chooses on them."""
        C, weights, report = calibrate(X, labels)
        classifier = _pipeline(C).fit(X, labels)
        return cls(spans, classifier, dict(meta or {}, trained_on=len(labels), class_weights=weights, **report))

    @property
    def weights(self) -> dict[str, float]:
        """The class weights the answer is decided with (none: the most probable class)."""
        return dict(self.meta.get("class_weights", ARGMAX))

    def predict(self, X: np.ndarray) -> list[str]:
        classes = [str(c) for c in self.classifier.classes_]
        return decide(self.classifier.predict_proba(X), classes, self.weights)

    def read(self, question: str, sentences: list[tuple[str, str | None]]) -> tuple[str, dict[str, float]]:
        """yes / no / maybe for the question over one source's (sentence, section) pairs, with the
        class probabilities."""
        x = features(question, results_sentences(sentences), self.spans)[None, :]
        probabilities = self.classifier.predict_proba(x)
        classes = [str(c) for c in self.classifier.classes_]
        return decide(probabilities, classes, self.weights)[0], {
            c: round(float(p), 3) for c, p in zip(classes, probabilities[0])
        }

    def save(self, folder: Path) -> None:
        save_estimators(Path(folder) / self.FILE, {"spans": self.spans, "classifier": self.classifier}, self.meta)

    @classmethod
    def load(cls, folder: Path) -> ClosedAnswerModel | None:
        """The stored reader, or None when there is none, it was fitted on other features or it has no
        class weights (a lake built by an earlier version: the bottom line then reads the cited evidence by
        the rules)."""
        stored = load_estimators(Path(folder) / cls.FILE)
        if stored is None:
            return None
        estimators, meta = stored
        classifier = estimators.get("classifier")
        if getattr(classifier, "n_features_in_", None) != len(FEATURES) or "class_weights" not in meta:
            return None
        return cls(estimators.get("spans"), classifier, meta)
