"""Which retrieved sentences state the answer: a learned evidence-sentence scorer.

The offline answer quotes sentences of the retrieved windows, and the verdict is read from the
quoted ones, so the sentence choice decides whether better retrieval gives a better answer.
Cosine with the question alone prefers sentences that restate the question (aims, methods) over
the one that reports the result. `SentenceScorer` is a logistic regression over `FEATURES` of a
(question, sentence) pair: the cosine, standardised over the candidate sentences (stored pooled
vectors and stand-alone embeddings differ in scale, their ranking does not), result and
statistics language, how much of the question's outcome, intervention and comparator (its rule
anchors) and of its content words the sentence repeats, its length, how many numbers it holds, and
whether it reports a change within one arm ("from 49.9% to 55.2%", "compared with baseline") or a
comparison of the arms ("between groups", "than the control group"; grouped 5-fold CV by article on
the 807 train prompts: P@1 0.705 without these two, 0.711 with them).
Beside them it reads the sentence's section (title, abstract, results, discussion, ...: the heading
path of its window) and the sentence's own words with the question's intervention, comparator and
outcome words replaced by markers (TF-IDF of word 1-2-grams, weighted LEXICAL_WEIGHT against the
dense features), so that it learns how a result is worded ("zarmi group ... than the zarmc group").
It is trained on Evidence Inference's *train* prompts: the sentences of each prompt's article,
positive when they hold an annotated evidence span (`evaluation/verdict_training.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set

import numpy as np

from ebm_platform.retrieval.features import SECTIONS, section_flags
from ebm_platform.retrieval.lexical import stem, stems
from ebm_platform.vocabulary import Anchors

RESULT_CUES = re.compile(
    r"\b(?:significant|improv|reduc|increas|decreas|recommend|effective|no difference|"
    r"superior|inferior|compared|versus|associated)\w*",
    re.I,
)
STATISTICS = re.compile(r"\bp\s*[<=>≤≥]|\bci\b|confidence interval|\d\s*%|\bsignifican", re.I)
# A change within one arm ("increased from 49.9% to 55.2%", "pre- to post-test") against a comparison
# of the arms ("between groups", "than the control group"): the second answers the question asked.
WITHIN_GROUP = re.compile(
    r"\bfrom (?:a )?(?:baseline|pre\w*|\(?[-−]?\d[\d.,]*)\S*\s+(?:\S+\s+){0,4}?to\b|\bwithin[- ]groups?\b|"
    r"\b(?:compared|relative) (?:with|to) (?:the )?(?:baseline|pre-?\w+)|\bin (?:both|all|each) (?:the )?(?:groups|arms)\b|"
    r"\bpre-? ?(?:to|and|vs\.?|versus) ?post",
    re.I,
)
BETWEEN_GROUPS = re.compile(
    r"\bbetween(?:[- ]groups?| (?:the )?(?:two |three )?(?:groups|arms))\b|\bgroup differences?\b|\bthan (?:in |with |after )?(?:the )?\w+|"
    r"\b(?:compared|relative) (?:with|to) (?:the )?(?!baseline|pre)\w+|\bversus\b|\bvs\b",
    re.I,
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_TOKEN = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
_QUESTION_FRAME = frozenset({"effect"})  # the benchmark's "What is the effect of"; its other words are stopwords
FEATURES = (
    "cosine, standardised over the candidates",
    "result language",
    "statistics",
    "outcome words",
    "intervention words",
    "comparator words",
    "question words",
    "log characters",
    "numbers / 10",
    "within-group change",
    "between-group comparison",
    "section: title",
    *(f"section: {name}" for name in SECTIONS),
)
# Weight of the marked words against the standardised features; chosen by grouped 5-fold CV (by
# article) on the train prompts: P@1 0.721 at 0.3 (0.698 at 1.0, 0.680 at 3.0; 0.696 without the words,
# 0.616 without the words or the sections).
LEXICAL_WEIGHT = 0.3
TITLE = "title"  # the section of a sentence from the document's title


def mark_arms(sentence: str, arm_i: set[str], arm_c: set[str], outcome: set[str]) -> list[str]:
    """The sentence's tokens, lower-cased, with the words of the intervention, comparator and outcome
    (stems) replaced by zarmi, zarmc and zoutc (a run of one arm's words becomes one marker)."""
    words: list[str] = []
    for token in _TOKEN.findall(sentence.lower()):
        key = stem(token)
        marker = (
            "zarmi"
            if key in arm_i - arm_c
            else "zarmc"
            if key in arm_c - arm_i
            else "zoutc"
            if key in outcome - arm_i - arm_c
            else token
        )
        if not (marker.startswith("zarm") and words and words[-1] == marker):
            words.append(marker)
    return words


def share_named(wanted: Set[str], found: Set[str]) -> float:
    """The share of the `wanted` stems (a question's outcome, an arm) among the `found` ones; 0 when
    nothing is wanted."""
    return len(wanted & found) / len(wanted) if wanted else 0.0


def sentence_features(
    question: str,
    anchors: Anchors,
    sentences: Sequence[str],
    cosines: np.ndarray,
    sections: Sequence[str | None] | None = None,
) -> np.ndarray:
    """(sentences, len(FEATURES) + 1) scorer input for each candidate sentence: the features, then
    (as text) the sentence with the question's arms marked. `sections`: each sentence's heading path."""
    if not len(sentences):
        return np.zeros((0, len(FEATURES) + 1), dtype=object)
    cosines = np.asarray(cosines, dtype=np.float64)
    z = (cosines - cosines.mean()) / (cosines.std() + 1e-6)
    outcome, intervention, comparator = (
        stems(a or "") for a in (anchors.outcome, anchors.intervention, anchors.comparator)
    )
    asked = stems(question) - _QUESTION_FRAME
    rows = []
    for sentence, standard, section in zip(sentences, z, sections or [None] * len(sentences)):
        words = stems(sentence)
        rows.append(
            [
                standard,
                bool(RESULT_CUES.search(sentence)),
                bool(STATISTICS.search(sentence)),
                share_named(outcome, words),
                share_named(intervention, words),
                share_named(comparator, words),
                share_named(asked, words),
                np.log1p(len(sentence)),
                len(_NUMBER.findall(sentence)) / 10,
                bool(WITHIN_GROUP.search(sentence)),
                bool(BETWEEN_GROUPS.search(sentence)),
                section == TITLE,
                *(bool(flag) for flag in section_flags(section).values()),
                " ".join(mark_arms(sentence, intervention, comparator, outcome)),
            ]
        )
    return np.array(rows, dtype=object)


class SentenceScorer:
    """Logistic regression over the standardised `FEATURES` and the marked words' TF-IDF (balanced
    classes: a few evidence sentences among an article's many)."""

    def __init__(self, pipeline) -> None:
        self.pipeline = pipeline

    @classmethod
    def stored(cls, pipeline) -> SentenceScorer | None:
        """The scorer of a stored pipeline; None when it was fitted on another input than
        `sentence_features` gives (a model saved by earlier code)."""
        return cls(pipeline) if getattr(pipeline, "n_features_in_", None) == len(FEATURES) + 1 else None

    @classmethod
    def train(cls, features: np.ndarray, evidence: np.ndarray) -> SentenceScorer:
        """Fit on `sentence_features` rows and whether each sentence holds evidence."""
        from sklearn.compose import ColumnTransformer
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        if len(set(evidence.tolist())) < 2:
            raise ValueError("the sentence scorer needs evidence and other sentences to learn from")
        columns = ColumnTransformer(
            [
                ("features", StandardScaler(), list(range(len(FEATURES)))),
                ("words", TfidfVectorizer(ngram_range=(1, 2), min_df=3, sublinear_tf=True), len(FEATURES)),
            ],
            transformer_weights={"features": 1.0, "words": LEXICAL_WEIGHT},
        )
        model = LogisticRegression(C=1.0, max_iter=3000, class_weight="balanced")
        return cls(make_pipeline(columns, model).fit(features, evidence))

    def scores(self, features: np.ndarray) -> np.ndarray:
        """A score per sentence (higher: more likely the one that states the result)."""
        return self.pipeline.decision_function(features) if len(features) else np.zeros(0)

    def weights(self) -> dict[str, float]:
        """The regression's weight per (standardised) feature, for the model's provenance (the
        features come first in its input; the words' weights follow and are not listed)."""
        return dict(zip(FEATURES, np.round(self.pipeline[-1].coef_[0][: len(FEATURES)], 3).tolist()))


def cosine_scores(sentences: Sequence[str], cosines: np.ndarray) -> np.ndarray:
    """The hand-set choice without a scorer: cosine plus 0.05 for result language."""
    return np.asarray(cosines, dtype=np.float64) + np.array([0.05 if RESULT_CUES.search(s) else 0.0 for s in sentences])
